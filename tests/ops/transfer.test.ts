// Issue 12, point 4: `import` copies a wazo-auth PostgreSQL database into the embedded PGlite
// database (counts per table, a non-empty target refused unless forced); `export` copies the
// embedded database back to PostgreSQL, where Tessera runs on it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase } from "../../src/db/index.ts";
import { exportDatabase, importDatabase, type TransferProgress, type TransferResult } from "../../src/db/transfer.ts";
import { formatCounts } from "../../src/cli/transfer.ts";
import { createTestApp } from "../helpers/app.ts";
import { scratchDatabase } from "../helpers/scratch-db.ts";
import {
  dataset,
  FIXTURE_ADMIN,
  fixtureServerMissing,
  loadWazoFixture,
  type FixtureDatabase,
} from "../helpers/wazo-fixture.ts";

const skip = fixtureServerMissing();
const basic = (login: string, password: string) => `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`;
const counts = (r: TransferResult) => Object.fromEntries(r.tables.map((t) => [t.table, t.rows]));

(skip ? describe.skip : describe)("import and export", () => {
  let fixture: FixtureDatabase;
  let dir: string;
  let imported: TransferResult;
  const progress: TransferProgress[] = [];
  let exportDb: { url: string; drop(): Promise<void> };

  beforeAll(async () => {
    fixture = await loadWazoFixture();
    dir = mkdtempSync(join(tmpdir(), "tessera-import-"));
    imported = await importDatabase({
      from: fixture.url,
      toDataDir: dir,
      batchSize: 20,
      onProgress: (p) => progress.push(p),
    });
    exportDb = await scratchDatabase("tessera_export");
  }, 120_000);
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await fixture?.drop();
    await exportDb?.drop();
  }, 30_000);

  test("import copies every row of every wazo-auth table, in batches, with progress", async () => {
    const wazoTables = (
      await fixture.sql<
        { t: string }[]
      >`select table_name as t from information_schema.tables where table_schema = 'public' and table_name like 'auth_%'`
    ).map((r) => r.t);
    expect(Object.keys(counts(imported)).sort()).toEqual(wazoTables.sort());
    for (const table of wazoTables) {
      const [row] = await fixture.sql.unsafe(`select count(*)::int as n from "${table}"`);
      expect({ table, rows: counts(imported)[table] }).toEqual({ table, rows: row!.n });
    }
    expect(counts(imported).auth_access).toBe(73); // more than one batch of 20
    const access = progress.filter((p) => p.table === "auth_access").map((p) => p.copied);
    expect(access).toEqual([0, 20, 40, 60, 73]);
    expect(progress.at(-1)).toMatchObject({
      tableIndex: imported.tables.length - 1,
      tableCount: imported.tables.length,
    });
    // Parents before children: tenants before users, users before their tokens' sessions' users…
    const order = imported.tables.map((t) => t.table);
    expect(order.indexOf("auth_tenant")).toBeLessThan(order.indexOf("auth_user"));
    expect(order.indexOf("auth_refresh_token")).toBeLessThan(order.indexOf("auth_token"));
    expect(formatCounts(imported)).toContain("auth_user                  7");
  });

  test("a non-empty embedded database is refused unless forced; sequences continue after the copied ids", async () => {
    await expect(importDatabase({ from: fixture.url, toDataDir: dir })).rejects.toThrow("--force");
    const again = await importDatabase({ from: fixture.url, toDataDir: dir, force: true });
    expect(counts(again)).toEqual(counts(imported));
    const db = await openDatabase({ dataDir: dir });
    try {
      const res = (await db.db.execute(
        sql.raw("insert into auth_access (access) values ('new.access') returning id"),
      )) as unknown as { rows: Array<{ id: number }> };
      expect(res.rows[0]!.id).toBe(76); // the fixture's sequence stood at 75
    } finally {
      await db.close();
    }
  }, 120_000);

  test("an unknown wazo-auth revision is refused by name", async () => {
    const other = await loadWazoFixture();
    const target = mkdtempSync(join(tmpdir(), "tessera-import-"));
    try {
      await other.sql`update alembic_version_auth set version_num = 'abc123unknown'`;
      await expect(importDatabase({ from: other.url, toDataDir: join(target, "data") })).rejects.toThrow(
        "abc123unknown",
      );
      expect(existsSync(join(target, "data"))).toBe(false); // refused before anything was created
    } finally {
      rmSync(target, { recursive: true, force: true });
      await other.drop();
    }
  }, 120_000);

  test("export to PostgreSQL gives the same counts, Tessera runs on it, and a second export is refused", async () => {
    const exported = await exportDatabase({ fromDataDir: dir, to: exportDb.url });
    for (const [table, rows] of Object.entries(counts(imported)))
      expect({ table, rows: counts(exported)[table] }).toEqual({
        table,
        rows: rows + (table === "auth_access" ? 1 : 0),
      });
    await expect(exportDatabase({ fromDataDir: dir, to: exportDb.url })).rejects.toThrow("--force");
    // A Tessera PostgreSQL database imports too: every table, Tessera's own included.
    const back = await importDatabase({ from: exportDb.url, toDataDir: dir, force: true });
    expect(counts(back)).toEqual(counts(exported));
    expect(Object.keys(counts(back))).toContain("tessera_event_outbox");
    const t = await createTestApp("postgres", { database: () => openDatabase({ url: exportDb.url, poolSize: 2 }) });
    try {
      expect(
        (
          await t.request("POST", "/0.1/token", {
            body: {},
            headers: { Authorization: basic(FIXTURE_ADMIN.username, FIXTURE_ADMIN.password) },
          })
        ).status,
      ).toBe(200);
      expect(
        (
          await t.request("POST", "/0.1/token", {
            body: {},
            headers: { Authorization: basic("fxbob", dataset.users.bob.password!) },
          })
        ).status,
      ).toBe(200);
      const refreshed = await t.request("POST", "/0.1/token", {
        body: { refresh_token: dataset.alice_refresh_token, client_id: "fx-app" },
      });
      expect(refreshed.status).toBe(200);
    } finally {
      await t.close();
    }
  }, 120_000);

  test("the CLI: npm run import -- URL prints counts per table; again without --force it refuses", async () => {
    const target = mkdtempSync(join(tmpdir(), "tessera-cli-import-"));
    const root = join(import.meta.dir, "../..");
    const run = async (...extra: string[]) => {
      const proc = Bun.spawn([process.execPath, "src/cli.ts", "import", fixture.url, ...extra], {
        cwd: root,
        env: { ...process.env, TESSERA_DATA_DIR: join(target, "data") },
        stdout: "pipe",
        stderr: "pipe",
      });
      const [out, err, code] = await Promise.all([
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
        proc.exited,
      ]);
      return { out, err, code };
    };
    try {
      const first = await run();
      expect(first.code).toBe(0);
      expect(first.out).toMatch(/auth_user +7\n/);
      expect(first.out).toMatch(/auth_access +73\n/);
      expect(first.err).toContain("table 1/");
      const second = await run();
      expect(second.code).toBe(1);
      expect(second.err).toContain("use --force");
    } finally {
      rmSync(target, { recursive: true, force: true });
    }
  }, 180_000);
});
