// A normal stop is no outage: closing the database on purpose (a clean SIGTERM, the end of a
// one-shot command such as the first `migrate` or `bootstrap` on an empty PostgreSQL) closes the
// LISTEN connection, and that must not log "notifications may be missed" or any other error line.
// On a private PostgreSQL cluster (LISTEN is PostgreSQL's); the shared server is never touched.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../src/db/index.ts";
import { createLogger } from "../../src/observe/log.ts";
import { createTestApp } from "../helpers/app.ts";
import { pgClusterAvailable, startPgCluster, type PgCluster } from "../helpers/pg-cluster.ts";
import { spawnService, waitForService } from "../helpers/service-process.ts";

const root = join(import.meta.dir, "../..");
const errorLines = (log: string) => log.split("\n").filter((l) => l.includes('"level":"error"'));

describe.skipIf(!pgClusterAvailable)("closing the database on purpose logs no error", () => {
  let cluster: PgCluster;
  const dir = mkdtempSync(join(tmpdir(), "tessera-quiet-close-"));

  beforeAll(async () => {
    cluster = await startPgCluster();
  }, 120_000);
  afterAll(async () => {
    await cluster?.destroy();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  test("one-shot commands on an empty PostgreSQL: migrate, bootstrap twice", () => {
    for (const args of [
      ["migrate"],
      ["bootstrap", "admin", "s3cret-admin-pw"],
      ["bootstrap", "admin", "s3cret-admin-pw"],
    ]) {
      const r = Bun.spawnSync([process.execPath, "src/cli.ts", ...args], {
        cwd: root,
        env: { ...process.env, TESSERA_CONFIG: "", DATABASE_URL: cluster.url },
      });
      expect([args.join(" "), r.exitCode]).toEqual([args.join(" "), 0]);
      expect(errorLines(r.stderr.toString() + r.stdout.toString())).toEqual([]);
    }
  }, 60_000);

  test("an app closed in-process: its LISTEN connection ends without a word", async () => {
    const lines: string[] = [];
    const t = await createTestApp("postgres", {
      database: () => openDatabase({ url: cluster.url, poolSize: 2, timeoutSeconds: 1 }),
      log: createLogger("info", (l) => lines.push(l)),
    });
    expect(t.app.database.listening()).toBe(true);
    await t.close();
    expect(errorLines(lines.join("\n"))).toEqual([]);
  }, 60_000);

  test("a clean SIGTERM of the service: exit 0, no error line", async () => {
    const service = spawnService(
      dir,
      `db_uri: "${cluster.url}"\npassword_hash_iterations: 1000\nshutdown_drain_seconds: 0\ntoken_cleanup_interval: 0`,
    );
    expect(await waitForService(service.base, 60)).toBe(true);
    service.proc.kill("SIGTERM");
    expect(await service.exitWithin(20_000)).toBe(0);
    expect(errorLines(service.log())).toEqual([]);
  }, 90_000);
});
