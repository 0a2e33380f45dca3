// `tessera audit` driven as an operator runs it, against the real process on an embedded database:
// list (--since, --actor, --json), export --format jsonl, then verify on the stopped service's
// database — intact (exit 0), then after an entry is edited directly in the database (exit 1,
// naming the entry).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase } from "../../src/db/index.ts";
import { freePort, waitForService } from "../helpers/service-process.ts";
import { timeArg } from "../../src/cli/audit.ts";

const root = join(import.meta.dir, "../..");
const dir = mkdtempSync(join(tmpdir(), "tessera-audit-cli-"));
const port = freePort();
const url = `http://127.0.0.1:${port}`;
writeFileSync(join(dir, "config.yml"), "password_hash_iterations: 1000\n");
const env = {
  TESSERA_CONFIG: join(dir, "config.yml"),
  TESSERA_DATA_DIR: join(dir, "data"),
  TESSERA_PORT: String(port),
  TESSERA_LOG_LEVEL: "warning",
  TESSERA_URL: url,
  TESSERA_AUTH_USER: "admin",
  TESSERA_AUTH_PASSWORD: "s3cret-admin",
};
let proc: ReturnType<typeof Bun.spawn> | null = null;

async function tessera(args: string[]) {
  const p = Bun.spawn([process.execPath, "src/cli.ts", ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code: await p.exited, out, err };
}

async function stopService() {
  proc?.kill("SIGTERM");
  await proc?.exited;
  proc = null;
}

beforeAll(async () => {
  expect((await tessera(["bootstrap", "admin", "s3cret-admin"])).code).toBe(0);
  proc = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: root,
    env: { ...process.env, ...env },
    stdout: "ignore",
    stderr: "pipe",
  });
  if (!(await waitForService(`${url}/0.1`, 30))) throw new Error("tessera did not start");
}, 90_000);

afterAll(async () => {
  await stopService();
  rmSync(dir, { recursive: true, force: true });
});

describe("tessera audit", () => {
  test("an age or an ISO time for --since", () => {
    expect(timeArg("1h", Date.parse("2026-11-24T12:00:00Z"))).toBe("2026-11-24T11:00:00.000Z");
    expect(timeArg("2026-11-01")).toBe("2026-11-01");
    expect(timeArg(undefined)).toBeUndefined();
  });

  test("list, filter, export, then verify: intact, and an edited entry named", async () => {
    const created = await tessera(["users", "create", "--username", "carol", "--password", "Carol-secret-1", "--json"]);
    expect(created.code).toBe(0);
    const carol = JSON.parse(created.out).uuid as string;
    const wrong = await fetch(`${url}/0.1/token`, {
      method: "POST",
      headers: { Authorization: `Basic ${btoa("carol:not-her-password")}`, "Content-Type": "application/json" },
      body: "{}",
    });
    expect(wrong.status).toBe(401);

    const listed = await tessera(["audit", "--since", "1h", "--json"]);
    expect(listed.code).toBe(0);
    const items = JSON.parse(listed.out) as Array<{ action: string; target: { uuid: string }; outcome: string }>;
    expect(items.map((i) => i.action)).toEqual(
      expect.arrayContaining(["login.success", "user.create", "login.failure"]),
    );
    expect(items.find((i) => i.action === "user.create")!.target.uuid).toBe(carol);
    const table = await tessera(["audit", "--action", "login.*", "--outcome", "invalid_credentials"]);
    expect([table.code, table.out]).toEqual([0, expect.stringContaining("login.failure")]);
    expect(table.out).not.toContain("user.create");
    const bad = await tessera(["audit", "--actor", "nobody"]);
    expect(bad.code).not.toBe(0);
    expect(bad.err).toContain('no user named "nobody"');

    const exported = await tessera(["audit", "export", "--format", "jsonl"]);
    expect(exported.code).toBe(0);
    const lines = exported.out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { uuid: string; action: string; time: string });
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(lines.map((l) => l.time)).toEqual(lines.map((l) => l.time).sort()); // oldest first
    expect(exported.out).not.toContain("Carol-secret-1");
    expect((await tessera(["audit", "export", "--format", "csv"])).code).toBe(2);

    await stopService(); // the embedded database has one process at a time
    const ok = await tessera(["audit", "verify"]);
    expect([ok.code, ok.out]).toEqual([0, expect.stringContaining("audit trail intact")]);

    const target = lines.find((l) => l.action === "user.create")!;
    const database = await openDatabase({ dataDir: join(dir, "data") });
    await database.db.execute(sql`alter table tessera.audit disable trigger audit_immutable`);
    await database.db.execute(sql`update tessera.audit set actor_address = '203.0.113.66' where uuid = ${target.uuid}`);
    await database.close();
    const broken = await tessera(["audit", "verify", "--json"]);
    expect(broken.code).toBe(1);
    expect(JSON.parse(broken.out).broken).toMatchObject({ uuid: target.uuid, reason: "hash_mismatch" });
    expect(broken.err).toContain(target.uuid);
  }, 120_000);
});
