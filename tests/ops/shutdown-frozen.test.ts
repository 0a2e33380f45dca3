// Shutdown while PostgreSQL is frozen (a private cluster SIGSTOPped, never the shared server):
// closing the database is bounded by `db_timeout` + 5 s, after which the process exits anyway and
// logs what it abandoned.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pgClusterAvailable, startPgCluster, type PgCluster } from "../helpers/pg-cluster.ts";
import { spawnService, waitForService } from "../helpers/service-process.ts";

describe.skipIf(!pgClusterAvailable)("shutdown while PostgreSQL is frozen", () => {
  let cluster: PgCluster;
  const dir = mkdtempSync(join(tmpdir(), "tessera-frozen-"));
  beforeAll(async () => (cluster = await startPgCluster()), 120_000);
  afterAll(async () => {
    await cluster?.destroy();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  test("SIGTERM exits within db_timeout + a few seconds and logs what it abandoned", async () => {
    const service = spawnService(
      dir,
      `db_uri: "${cluster.url}"\ndb_timeout: 1\nshutdown_drain_seconds: 0\npassword_hash_iterations: 1000`,
    );
    expect(await waitForService(service.base, 90)).toBe(true);
    cluster.freeze();
    try {
      // A request waiting on the frozen database, so that something is in flight.
      const waiting = fetch(`${service.base}/users`, { headers: { "X-Auth-Token": crypto.randomUUID() } }).catch(
        () => null,
      );
      await Bun.sleep(200);
      const started = performance.now();
      service.proc.kill("SIGTERM");
      const code = await service.exitWithin(20_000);
      const seconds = (performance.now() - started) / 1000;
      await waiting;
      console.log(`exit ${code} ${seconds.toFixed(1)} s after SIGTERM with PostgreSQL frozen`);
      expect(code).toBe(1); // exited, and not cleanly
      expect(seconds).toBeLessThan(1 + 5 + 3);
      const line = service
        .log()
        .split("\n")
        .find((l) => l.includes("work abandoned"));
      const abandoned: string[] = JSON.parse(line!).abandoned;
      console.log(`abandoned: ${abandoned.join(", ")}`);
      expect(abandoned[0]).toMatch(/^unlisten tessera_/); // the first step that waited for the database, by name
      expect(abandoned.at(-1)).toBe("database (postgres)");
    } finally {
      cluster.thaw();
    }
  }, 60_000);
});
