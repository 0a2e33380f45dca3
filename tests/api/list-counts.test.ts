// The users list's `total` comes from per-tenant counters kept by triggers: they must follow every
// way users appear and disappear (API, bulk SQL, a tenant's cascade, TRUNCATE of an import).
import { expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { execRows } from "../../src/db/index.ts";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken, createTenantRow } from "../helpers/fixtures.ts";

describeEachDb("users list totals", (get) => {
  async function totals(tenant: string): Promise<{ listed: number; counted: number }> {
    const t = get();
    const token = await adminToken(t.app);
    const r = await t.request("GET", "/0.1/users?limit=1", { token, tenant });
    expect(r.status).toBe(200);
    const [row] = await execRows<{ n: number }>(
      t.app.db,
      sql`select count(*)::int as n from auth_user where tenant_uuid = ${tenant}`,
    );
    return { listed: r.json.total, counted: row!.n };
  }

  test("follow creations, deletions, bulk inserts, tenant deletion and TRUNCATE", async () => {
    const t = get();
    const token = await adminToken(t.app);
    const a = await createTenantRow(t.app);
    const b = await createTenantRow(t.app);
    for (let i = 0; i < 3; i++) {
      expect(
        (await t.request("POST", "/0.1/users", { token, tenant: a, body: { username: `count-a${i}` } })).status,
      ).toBe(200);
    }
    const created = await t.request("POST", "/0.1/users", { token, tenant: b, body: { username: "count-b" } });
    expect(await totals(a)).toEqual({ listed: 3, counted: 3 });
    expect(await totals(b)).toEqual({ listed: 1, counted: 1 });

    await t.app.db.execute(
      sql`insert into auth_user (uuid, username, tenant_uuid) select gen_random_uuid()::text, 'bulk' || i, ${a} from generate_series(1, 50) i`,
    );
    expect(await totals(a)).toEqual({ listed: 53, counted: 53 });
    await t.app.db.execute(sql`update auth_user set firstname = 'x' where tenant_uuid = ${a}`); // no change of tenant
    expect(await totals(a)).toEqual({ listed: 53, counted: 53 });

    expect((await t.request("DELETE", `/0.1/users/${created.json.uuid}`, { token, tenant: b })).status).toBe(204);
    expect(await totals(b)).toEqual({ listed: 0, counted: 0 });
    // a filtered or empty page still has the right counts
    const page = await t.request("GET", "/0.1/users?limit=5&offset=100", { token, tenant: a });
    expect([page.json.items.length, page.json.total, page.json.filtered]).toEqual([0, 53, 53]);
    const search = await t.request("GET", "/0.1/users?search=bulk1&limit=2", { token, tenant: a });
    expect([search.json.items.length, search.json.total, search.json.filtered]).toEqual([2, 53, 11]);

    await t.app.db.execute(sql`delete from auth_tenant where uuid = ${a}`); // cascades to its users
    const [left] = await execRows<{ n: number }>(
      t.app.db,
      sql`select count(*)::int as n from tessera.tenant_user_count where tenant_uuid = ${a}`,
    );
    expect(left!.n).toBe(0);

    // An import empties the tables with TRUNCATE, then copies the rows back: counts rebuild.
    const before = await execRows<{ tenant_uuid: string; users: number }>(
      t.app.db,
      sql`select tenant_uuid, users from tessera.tenant_user_count order by tenant_uuid`,
    );
    await t.app.db.transaction(async (tx) => {
      await tx.execute(sql`create temp table saved_tenants on commit drop as select * from auth_tenant`);
      await tx.execute(sql`create temp table saved_users on commit drop as select * from auth_user`);
      await tx.execute(sql`truncate auth_user cascade`); // takes auth_tenant along (tenant contact → user)
      const [empty] = await execRows<{ n: number }>(tx, sql`select count(*)::int as n from tessera.tenant_user_count`);
      expect(empty!.n).toBe(0);
      await tx.execute(sql`insert into auth_tenant select * from saved_tenants`);
      await tx.execute(sql`insert into auth_user select * from saved_users`);
    });
    const after = await execRows<{ tenant_uuid: string; users: number }>(
      t.app.db,
      sql`select tenant_uuid, users from tessera.tenant_user_count order by tenant_uuid`,
    );
    expect(after).toEqual(before);
    expect(await subtreeMismatches()).toEqual([]);
  });

  /** Every tenant's kept subtree count against a count of the users below it, by their paths. */
  async function subtreeMismatches(): Promise<unknown[]> {
    return execRows(
      get().app.db,
      sql`select p.tenant_uuid, coalesce(s.users, 0) as kept,
            (select count(*)::int from auth_user u join tessera.tenant_path q on q.tenant_uuid = u.tenant_uuid
             where starts_with(q.path, p.path)) as counted
          from tessera.tenant_path p left join tessera.tenant_subtree_users s on s.tenant_uuid = p.tenant_uuid
          where coalesce(s.users, 0) <> (select count(*)::int from auth_user u join tessera.tenant_path q
            on q.tenant_uuid = u.tenant_uuid where starts_with(q.path, p.path))`,
    );
  }

  test("recurse=true totals (subtree counters) follow users, moves of tenants and users, and deletions", async () => {
    const t = get();
    const token = await adminToken(t.app);
    const a = await createTenantRow(t.app);
    const b = await createTenantRow(t.app, { parentUuid: a });
    const c = await createTenantRow(t.app, { parentUuid: b });
    const d = await createTenantRow(t.app);
    const addUsers = (tenant: string, n: number, prefix: string) =>
      t.app.db.execute(
        sql`insert into auth_user (uuid, username, tenant_uuid) select gen_random_uuid()::text, ${prefix} || i, ${tenant} from generate_series(1, ${n}) i`,
      );
    await addUsers(a, 1, "sub-a");
    await addUsers(b, 2, "sub-b");
    await addUsers(c, 3, "sub-c");
    await addUsers(d, 4, "sub-d");
    const recursed = async (tenant: string) =>
      (await t.request("GET", "/0.1/users?recurse=true&limit=1", { token, tenant })).json.total as number;
    expect([await recursed(a), await recursed(b), await recursed(c), await recursed(d)]).toEqual([6, 5, 3, 4]);
    const [all] = await execRows<{ n: number }>(t.app.db, sql`select count(*)::int as n from auth_user`);
    expect(await recursed(t.app.topTenantUuid)).toBe(all!.n);
    expect(await subtreeMismatches()).toEqual([]);

    // b (with c) moves under d: 5 users leave a and join d.
    expect((await t.request("PUT", `/0.1/tenants/${b}/parent/${d}`, { token })).status).toBe(204);
    expect([await recursed(a), await recursed(b), await recursed(d)]).toEqual([1, 5, 9]);
    expect(await subtreeMismatches()).toEqual([]);

    // A user moved by SQL (an import), then a tenant with users deleted (its users go by cascade).
    await t.app.db.execute(sql`update auth_user set tenant_uuid = ${a} where username = 'sub-c1'`);
    expect([await recursed(a), await recursed(d)]).toEqual([2, 8]);
    expect((await t.request("DELETE", `/0.1/tenants/${c}`, { token })).status).toBe(204);
    expect([await recursed(b), await recursed(d)]).toEqual([2, 6]);
    expect(await subtreeMismatches()).toEqual([]);
    const [afterDelete] = await execRows<{ n: number }>(t.app.db, sql`select count(*)::int as n from auth_user`);
    expect(await recursed(t.app.topTenantUuid)).toBe(afterDelete!.n);
  });
});
