// The backup and restore procedures of docs/operations.md ("Backups"), run as written: `tessera
// backup` through the running service and `tessera restore` into a new directory; the embedded
// database's data directory copied (tar) once its process has closed it; PostgreSQL dumped with
// pg_dump -Fc and restored with pg_restore into a new database (and GET /backup refused there).
// After a restore, a user created before the backup logs in with its password.
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../src/db/index.ts";
import { createTestApp, databaseKinds, type TestApp } from "../helpers/app.ts";
import { adminToken, createUserRow } from "../helpers/fixtures.ts";
import { scratchDatabase } from "../helpers/scratch-db.ts";
import { basicAuth, spawnService, waitForService } from "../helpers/service-process.ts";

const dir = mkdtempSync(join(tmpdir(), "tessera-backup-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function sh(command: string[], env: Record<string, string> = {}): Promise<string> {
  const p = Bun.spawn(command, { stdout: "pipe", stderr: "pipe", env: { ...process.env, ...env } });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  if ((await p.exited) !== 0) throw new Error(`${command.join(" ")}: ${out}${err}`);
  return out;
}

const cli = join(import.meta.dir, "../../src/cli.ts");

const login = (t: TestApp, name: string) =>
  t.request("POST", "/0.1/token", { body: {}, headers: { Authorization: `Basic ${btoa(`${name}:pw-${name}`)}` } });

/** A user with a password in `t`'s database. */
async function seedUser(t: TestApp): Promise<string> {
  const name = `keep${crypto.randomUUID().slice(0, 8)}`;
  await createUserRow(t.app, { username: name, password: `pw-${name}` });
  expect((await login(t, name)).status).toBe(200);
  return name;
}

test("PGlite: tessera backup copies the running service's database; tessera restore brings it back", async () => {
  const work = join(dir, "online");
  mkdirSync(work);
  const service = spawnService(
    work,
    "bootstrap_user_on_startup: true\nbootstrap_user_username: root\nbootstrap_user_password: root-password-1\nargon2: {memory_kib: 256, time_cost: 1}\n",
  );
  const archive = join(dir, "online.tar.gz");
  try {
    expect(await waitForService(service.base, 60)).toBe(true);
    const login = await fetch(`${service.base}/token`, {
      method: "POST",
      headers: { ...basicAuth("root", "root-password-1"), "Content-Type": "application/json" },
      body: "{}",
    });
    const token = ((await login.json()) as { data: { token: string } }).data.token;
    const out = await sh([
      process.execPath,
      cli,
      "backup",
      "--url",
      `http://127.0.0.1:${service.port}`,
      "--token",
      token,
      "--output",
      archive,
    ]);
    expect(out).toStartWith(`wrote ${archive} (`);
    // Still serving, and a user created after the backup is not in it.
    const late = await fetch(`${service.base}/users`, {
      method: "POST",
      headers: { "X-Auth-Token": token, "Content-Type": "application/json" },
      body: JSON.stringify({ username: "after-backup", password: "pw-after-backup" }),
    });
    expect(late.status).toBe(200);
  } finally {
    service.proc.kill("SIGTERM");
    expect(await service.exitWithin(30_000)).toBe(0);
  }
  const restored = join(dir, "online-restored");
  const out = await sh([process.execPath, cli, "restore", archive], {
    TESSERA_CONFIG: "",
    DATABASE_URL: "",
    TESSERA_DATA_DIR: restored,
  });
  expect(out).toContain(`restored ${archive} into ${restored}`);
  // A second restore over it is refused: the directory is not empty.
  await expect(
    sh([process.execPath, cli, "restore", archive], {
      TESSERA_CONFIG: "",
      DATABASE_URL: "",
      TESSERA_DATA_DIR: restored,
    }),
  ).rejects.toThrow("is not empty");
  const t = await createTestApp("pglite", { database: () => openDatabase({ dataDir: restored, timeoutSeconds: 5 }) });
  try {
    const r = await t.request("POST", "/0.1/token", { body: {}, headers: basicAuth("root", "root-password-1") });
    expect(r.status).toBe(200);
    const users = await t.request("GET", "/0.1/users?search=after-backup", { token: r.json.data.token });
    expect(users.json.total).toBeGreaterThan(0);
    expect(users.json.filtered).toBe(0);
  } finally {
    await t.close();
  }
}, 180_000);

test.skipIf(!databaseKinds().includes("postgres"))(
  "PostgreSQL: GET /backup is refused (409), naming pg_dump",
  async () => {
    const t = await createTestApp("postgres");
    try {
      const r = await t.request("GET", "/0.1/backup", { token: await adminToken(t.app) });
      expect([r.status, r.json.error_id]).toEqual([409, "backup-unsupported"]);
      expect(r.json.message).toContain("pg_dump");
    } finally {
      await t.close();
    }
  },
);

test("PGlite: the data directory, copied once the service stopped, restores into a new directory", async () => {
  const live = join(dir, "live");
  const restored = join(dir, "restored");
  const archive = join(dir, "tessera-data.tar.gz");
  const open = (dataDir: string) => () => openDatabase({ dataDir, timeoutSeconds: 5 });
  let t = await createTestApp("pglite", { database: open(live) });
  let name: string;
  try {
    name = await seedUser(t);
  } finally {
    await t.close(); // the service stopped: its lock file gone, every write on disk
  }
  await sh(["tar", "-C", live, "-czf", archive, "."]);
  mkdirSync(restored);
  await sh(["tar", "-C", restored, "-xzf", archive]);
  t = await createTestApp("pglite", { database: open(restored) });
  try {
    expect((await login(t, name)).status).toBe(200);
  } finally {
    await t.close();
  }
}, 120_000);

test.skipIf(!process.env.TEST_DATABASE_URL)(
  "PostgreSQL: pg_dump -Fc, then pg_restore into a new database",
  async () => {
    const source = await scratchDatabase("tessera_backup_src");
    const target = await scratchDatabase("tessera_backup_dst");
    const dump = join(dir, "tessera.dump");
    try {
      const open = (url: string) => () => openDatabase({ url, poolSize: 2, timeoutSeconds: 5 });
      let t = await createTestApp("postgres", { database: open(source.url) });
      let name: string;
      try {
        name = await seedUser(t);
      } finally {
        await t.close();
      }
      await sh(["pg_dump", "-Fc", "-f", dump, source.url]);
      await sh(["pg_restore", "--no-owner", "-d", target.url, dump]);
      t = await createTestApp("postgres", { database: open(target.url) });
      try {
        expect((await login(t, name)).status).toBe(200);
      } finally {
        await t.close();
      }
    } finally {
      await source.drop();
      await target.drop();
    }
  },
  120_000,
);
