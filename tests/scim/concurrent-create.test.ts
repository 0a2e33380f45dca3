// Provisioning at scale (issue 41): creations of different logins run side by side. A transaction
// that created a user and has not committed holds only that user's logins (the per-key lock) and
// no counter row (the counts are folded at commit, migration 0045): a directory creating another
// user meanwhile — in another tenant, or in the same one — is answered at once; one creating the
// same login waits for the commit and then gets 409 uniqueness; the counts come out exact.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { execRows } from "../../src/db/index.ts";
import { inTransaction } from "../../src/db/tx.ts";
import { insertUser } from "../../src/services/identity/users.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { adminToken, createTenantRow } from "../helpers/fixtures.ts";
import { scim, scimToken, USER_SCHEMA } from "../helpers/scim.ts";
import { until } from "../helpers/wait.ts";

// One connection per transaction: PGlite has a single one, so this is PostgreSQL's behaviour only.
describe.skipIf(!process.env.TEST_DATABASE_URL)("SCIM: creations run side by side [postgres]", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp("postgres");
  }, 60_000);
  afterAll(() => t?.close());

  const counted = async (tenant: string) =>
    (
      await execRows<{ users: number }>(
        t.app.db,
        sql`select coalesce((select users from tessera.tenant_user_count where tenant_uuid = ${tenant}), 0)::int as users`,
      )
    )[0]!.users;

  test("an open creation blocks neither another tenant's nor its own tenant's other logins; the same login waits, then 409", async () => {
    const admin = await adminToken(t.app);
    const [a, b] = [await createTenantRow(t.app), await createTenantRow(t.app)];
    const [bearerA, bearerB] = [await scimToken(t, admin, a), await scimToken(t, admin, b)];
    let release = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let inserted = false;
    const holder = inTransaction(t.app, async (tx) => {
      await insertUser(t.app, tx, a, { username: "held@side.example", email_address: "held@side.example" });
      inserted = true;
      await gate;
    });
    await until(() => inserted);
    const done: Record<string, number> = {};
    const create = (bearer: string, userName: string) =>
      scim(t, bearer, "POST", "/Users", { schemas: [USER_SCHEMA], userName }).then((r) => {
        done[`${userName}/${bearer === bearerA ? "a" : "b"}`] = r.status;
      });
    const others = [create(bearerB, "other@side.example"), create(bearerA, "neighbour@side.example")];
    // Both answered while the first transaction is still open.
    await until(() => Object.keys(done).length === 2, 15_000);
    expect(done).toEqual({ "other@side.example/b": 201, "neighbour@side.example/a": 201 });
    const same = create(bearerB, "HELD@side.example");
    await until(
      async () =>
        (
          await execRows(
            t.app.db,
            sql`select 1 from pg_locks where locktype = 'advisory' and not granted and classid = 2202205`,
          )
        ).length > 0,
      15_000,
    );
    expect(done["HELD@side.example/b"]).toBeUndefined();
    release();
    await Promise.all([holder, ...others, same]);
    expect(done["HELD@side.example/b"]).toBe(409);
    expect([await counted(a), await counted(b)]).toEqual([2, 1]);
  });
});
