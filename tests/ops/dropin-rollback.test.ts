// Issue 12, points 1 and 3: adoption of a wazo-auth database is additive, idempotent, safe with two
// instances starting at once, refuses an unknown revision untouched; and with
// `password_hash_algorithm: pbkdf2_sha512` the database Tessera has used still satisfies
// wazo-auth's schema (catalogues compared with the pristine fixture) with new passwords in its format.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { pbkdf2Sync } from "node:crypto";
import type postgres from "postgres";
import { openDatabase } from "../../src/db/index.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import {
  dataset,
  FIXTURE_ADMIN,
  FIXTURE_XIVO_UUID,
  fixtureServerMissing,
  loadWazoFixture,
  type FixtureDatabase,
} from "../helpers/wazo-fixture.ts";

const basic = (login: string, password: string) => `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`;
const skip = fixtureServerMissing();
const d = skip ? describe.skip : describe;

/** wazo-auth's schema as information_schema and pg_catalog describe it, one sorted line per item. */
async function catalogue(sql: postgres.Sql, tables: string[]) {
  const lines = async (query: Promise<Record<string, unknown>[]>) =>
    (await query).map((r) => Object.values(r).join(" | ")).sort();
  return {
    columns:
      await lines(sql`select table_name, column_name, data_type, udt_name, character_maximum_length, is_nullable, column_default
      from information_schema.columns where table_schema = 'public' and table_name in ${sql(tables)}`),
    // Primary keys, unique, foreign keys (with their actions) and checks; NOT NULL is in columns.
    constraints:
      await lines(sql`select tc.table_name, tc.constraint_name, tc.constraint_type, pg_get_constraintdef(c.oid) as definition
      from information_schema.table_constraints tc
      join pg_constraint c on c.conname = tc.constraint_name and c.conrelid = ('public.' || quote_ident(tc.table_name))::regclass
      where tc.table_schema = 'public' and tc.table_name in ${sql(tables)} and c.contype in ('p', 'u', 'f', 'c')`),
    indexes: await lines(
      sql`select tablename, indexname, indexdef from pg_indexes where schemaname = 'public' and tablename in ${sql(tables)}`,
    ),
    alembic: await lines(sql`select version_num from alembic_version_auth`),
  };
}

async function publicTables(sql: postgres.Sql): Promise<string[]> {
  return (
    await sql<
      { table_name: string }[]
    >`select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`
  )
    .map((r) => r.table_name)
    .sort();
}

d("rolling back to wazo-auth (password_hash_algorithm: pbkdf2_sha512)", () => {
  let pristine: FixtureDatabase;
  let used: FixtureDatabase;
  let t: TestApp;

  beforeAll(async () => {
    [pristine, used] = await Promise.all([loadWazoFixture(), loadWazoFixture()]);
    t = await createTestApp("postgres", {
      config: { uuid: FIXTURE_XIVO_UUID, password_hash_algorithm: "pbkdf2_sha512", password_hash_iterations: 250_000 },
      database: () => openDatabase({ url: used.url, poolSize: 5 }),
    });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await pristine?.drop();
    await used?.drop();
  }, 30_000);

  test("after users created, passwords changed and sessions opened, wazo-auth's schema is intact", async () => {
    const admin = (
      await t.request("POST", "/0.1/token", {
        body: {},
        headers: { Authorization: basic(FIXTURE_ADMIN.username, FIXTURE_ADMIN.password) },
      })
    ).json.data.token;
    const created = await t.request("POST", "/0.1/users", {
      token: admin,
      tenant: dataset.tenants.acme,
      body: { username: "newbie", password: "newbie-pw", email_address: "newbie@fx.example.com" },
    });
    expect(created.status).toBe(200);
    const alice = dataset.users.alice;
    expect(
      (
        await t.request("PUT", `/0.1/users/${alice.uuid}/password`, {
          token: admin,
          body: { old_password: alice.password, new_password: "alice-new" },
        })
      ).status,
    ).toBe(204);
    const offline = await t.request("POST", "/0.1/token", {
      body: { access_type: "offline", client_id: "rollback-app" },
      headers: { Authorization: basic("newbie", "newbie-pw") },
    });
    expect(offline.status).toBe(200);
    expect(
      (
        await t.request("POST", "/0.1/token", {
          body: {},
          headers: { Authorization: basic("fxbob", dataset.users.bob.password!) },
        })
      ).status,
    ).toBe(200);
    expect((await t.request("DELETE", `/0.1/token/${admin}`)).status).toBe(200); // logout, as wazo-auth answers

    // Same tables (Tessera adds only its own tessera_* tables), same columns, types, constraints
    // and indexes of wazo-auth's tables, same alembic revision.
    const wazoTables = await publicTables(pristine.sql);
    const nowTables = await publicTables(used.sql);
    expect(nowTables.filter((n) => !n.startsWith("tessera_"))).toEqual(wazoTables);
    const before = await catalogue(pristine.sql, wazoTables);
    const after = await catalogue(used.sql, wazoTables);
    expect(after.alembic).toEqual(["1c862ebfbb3a"]);
    expect(after.alembic).toEqual(before.alembic);
    expect(before.constraints.length).toBe(60); // the dump: 31 keys and uniques, 27 foreign keys, 2 checks
    expect(before.constraints).toContain(
      "auth_user | auth_user_purpose_check | CHECK | CHECK ((purpose = ANY (ARRAY['user'::text, 'internal'::text, 'external_api'::text])))",
    );
    expect(after.constraints).toEqual(before.constraints);
    for (const column of before.columns) expect(after.columns).toContain(column);
    for (const index of before.indexes) expect(after.indexes).toContain(index);
    // What Tessera added to wazo-auth's tables: nullable or defaulted columns, plain indexes.
    const addedColumns = after.columns.filter((c) => !before.columns.includes(c));
    expect(addedColumns.map((c) => c.split(" | ").slice(0, 2).join("."))).toEqual([
      "auth_token.dpop_jkt",
      "auth_token.expire_soon_notified",
      "auth_user.password_change_required",
      "auth_user.password_iterations",
    ]);
    for (const c of addedColumns) expect(c.includes("| YES |") || !c.endsWith("| ")).toBe(true);
    for (const index of after.indexes.filter((i) => !before.indexes.includes(i))) expect(index).not.toContain("UNIQUE");

    // New passwords are in wazo-auth's format: what hashlib.pbkdf2_hmac('sha512', pw, salt, 250000) gives.
    const rows = await used.sql<
      { username: string; password_hash: string; password_salt: Buffer; password_iterations: number | null }[]
    >`
      select username, password_hash, password_salt, password_iterations from auth_user where username in ('newbie', 'fxalice', 'fxbob')`;
    const passwords: Record<string, string> = {
      newbie: "newbie-pw",
      fxalice: "alice-new",
      fxbob: dataset.users.bob.password!,
    };
    expect(rows.length).toBe(3);
    for (const row of rows) {
      expect(row.password_iterations).toBeNull();
      expect(row.password_salt.length).toBe(64);
      expect(pbkdf2Sync(passwords[row.username]!, row.password_salt, 250_000, 64, "sha512").toString("hex")).toBe(
        row.password_hash,
      );
    }
  }, 60_000);
});

d("adopting a wazo-auth database", () => {
  test("two instances starting at once adopt it once; a restart changes nothing", async () => {
    const fixture = await loadWazoFixture();
    try {
      const [a, b] = await Promise.all([
        openDatabase({ url: fixture.url, poolSize: 2 }),
        openDatabase({ url: fixture.url, poolSize: 2 }),
      ]);
      await Promise.all([a.close(), b.close()]);
      const journal = await fixture.sql<{ hash: string }[]>`select hash from drizzle.__drizzle_migrations order by id`;
      expect(new Set(journal.map((r) => r.hash)).size).toBe(journal.length);
      const catalogueBefore = await catalogue(fixture.sql, await publicTables(fixture.sql));
      const again = await openDatabase({ url: fixture.url, poolSize: 2 });
      await again.close();
      expect(await catalogue(fixture.sql, await publicTables(fixture.sql))).toEqual(catalogueBefore);
      expect((await fixture.sql`select hash from drizzle.__drizzle_migrations`).length).toBe(journal.length);
    } finally {
      await fixture.drop();
    }
  }, 60_000);

  test("an unknown wazo-auth revision is refused by name, and nothing is changed", async () => {
    const fixture = await loadWazoFixture();
    try {
      await fixture.sql`update alembic_version_auth set version_num = 'f00dfeedbeef'`;
      const tables = await publicTables(fixture.sql);
      const before = await catalogue(fixture.sql, tables);
      await expect(openDatabase({ url: fixture.url, poolSize: 2 })).rejects.toThrow("f00dfeedbeef");
      expect(await publicTables(fixture.sql)).toEqual(tables);
      expect(await catalogue(fixture.sql, tables)).toEqual(before);
      expect((await fixture.sql`select 1 from information_schema.schemata where schema_name = 'drizzle'`).length).toBe(
        0,
      );
    } finally {
      await fixture.drop();
    }
  }, 60_000);
});
