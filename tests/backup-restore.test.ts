// The backup and restore procedures of docs/operations.md ("Backups"), run as written: the embedded
// database's data directory copied (tar) once its process has closed it, and restored into a new
// directory; PostgreSQL dumped with pg_dump -Fc and restored with pg_restore into a new database.
// After a restore, a user created before the backup logs in with its password.
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../src/db/index.ts";
import { createTestApp, type TestApp } from "./helpers/app.ts";
import { createUserRow } from "./helpers/fixtures.ts";
import { scratchDatabase } from "./helpers/scratch-db.ts";

const dir = mkdtempSync(join(tmpdir(), "tessera-backup-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function sh(command: string[]): Promise<void> {
  const p = Bun.spawn(command, { stdout: "pipe", stderr: "pipe" });
  const err = await new Response(p.stderr).text();
  if ((await p.exited) !== 0) throw new Error(`${command.join(" ")}: ${err}`);
}

const login = (t: TestApp, name: string) =>
  t.request("POST", "/0.1/token", { body: {}, headers: { Authorization: `Basic ${btoa(`${name}:pw-${name}`)}` } });

/** A user with a password in `t`'s database. */
async function seedUser(t: TestApp): Promise<string> {
  const name = `keep${crypto.randomUUID().slice(0, 8)}`;
  await createUserRow(t.app, { username: name, password: `pw-${name}` });
  expect((await login(t, name)).status).toBe(200);
  return name;
}

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
