// The token check's copy of the tenant tree follows changes without reloading every row: the
// trigger announces what changed (drizzle/0010) and each instance applies it; only a bulk change
// makes it reload. Changes are made with plain SQL, as another instance (or an operator) would.
import { expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, tokenFor } from "../helpers/fixtures.ts";

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await Bun.sleep(10);
  expect(condition()).toBe(true);
}

describeEachDb("tenant tree copy", (get) => {
  test("insertions, moves and deletions are applied, not reloaded; a bulk insert reloads", async () => {
    const t = get();
    const tree = t.app.tenantTree;
    const a = await createTenantRow(t.app);
    const b = await createTenantRow(t.app);
    expect(await tree.isSubtenant(t.app.db, a, t.app.topTenantUuid)).toBe(true);
    const loads = tree.loads;
    const child = randomUUID();
    await t.app.db.execute(
      sql`insert into auth_tenant (uuid, slug, parent_uuid) values (${child}, ${child.slice(0, 10)}, ${a})`,
    );
    await until(() => tree.isSubtenantNow(child, a) === true);
    await t.app.db.execute(sql`update auth_tenant set parent_uuid = ${b} where uuid = ${child}`);
    await until(() => tree.isSubtenantNow(child, b) === true);
    expect(tree.isSubtenantNow(child, a)).toBe(false);
    await t.app.db.execute(sql`update auth_tenant set name = 'renamed' where uuid = ${child}`); // not a tree change
    await t.app.db.execute(sql`delete from auth_tenant where uuid = ${child}`);
    await until(() => tree.isSubtenantNow(child, b) === false);
    expect(tree.isSubtenantNow(b, t.app.topTenantUuid)).toBe(true);
    expect(tree.loads).toBe(loads);
    // 150 tenants in one statement: more than a notice holds, so the copy is dropped and reloaded.
    await t.app.db.execute(sql`insert into auth_tenant (uuid, slug, parent_uuid)
      select gen_random_uuid()::text, 'cache' || i, ${b} from generate_series(1, 150) i`);
    await until(() => tree.isSubtenantNow(b, t.app.topTenantUuid) === undefined);
    const [row] = await t.app.db.query.tenants.findMany({ where: (x, { eq }) => eq(x.slug, "cache77") });
    expect(await tree.isSubtenant(t.app.db, row!.uuid, b)).toBe(true);
    expect(tree.loads).toBe(loads + 1);
  });

  test("a tenant created through the API is known to the token check at once, without a reload", async () => {
    const t = get();
    const { token } = await tokenFor(t.app, { acl: ["auth.#"] });
    await t.request("HEAD", `/0.1/token/${token}?tenant=${t.app.topTenantUuid}`);
    const loads = t.app.tenantTree.loads;
    const created = (await t.request("POST", "/0.1/tenants", { token, body: { name: "fresh" } })).json;
    expect((await t.request("HEAD", `/0.1/token/${token}?tenant=${created.uuid}`)).status).toBe(204);
    expect(t.app.tenantTree.loads).toBe(loads);
  });

  test("this instance's own moves and deletions are applied to the copy; unless their own notice came first", async () => {
    const t = get();
    const a = await createTenantRow(t.app);
    const b = await createTenantRow(t.app);
    const child = await createTenantRow(t.app, { parentUuid: a });
    const { token } = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: b });
    expect((await t.request("HEAD", `/0.1/token/${token}?tenant=${child}`)).status).toBe(403);
    const loads = t.app.tenantTree.loads;
    const admin = await tokenFor(t.app, { acl: ["auth.#"] });
    const moved = await t.request("PUT", `/0.1/tenants/${child}/parent/${b}`, { token: admin.token });
    expect(moved.status).toBe(204);
    // Known at once, by the fast path (memory only): b's admin now reaches the moved tenant.
    expect((await t.request("HEAD", `/0.1/token/${token}?tenant=${child}`)).status).toBe(204);
    expect((await t.request("DELETE", `/0.1/tenants/${child}`, { token: admin.token })).status).toBe(204);
    expect((await t.request("HEAD", `/0.1/token/${token}?tenant=${child}`)).status).toBe(403);
    expect(t.app.tenantTree.loads).toBe(loads);

    // Directly: a change applied unless its own notice was already heard since the mark (then the
    // copy holds it, and whatever came after it).
    const tree = t.app.tenantTree;
    const quiet = tree.mark();
    tree.applyNotice(`+${a} ${randomUUID()}`); // an earlier change of a, heard late
    tree.changed(a, b, quiet);
    expect(tree.isSubtenantNow(a, b)).toBe(true);
    const busy = tree.mark();
    tree.applyNotice(`+${a} ${b}`); // this change's own notice, heard before the commit's callback
    tree.applyNotice(`+${a} ${t.app.topTenantUuid}`); // then a later move of a
    tree.changed(a, b, busy);
    expect(tree.isSubtenantNow(a, b)).toBe(false);
    expect(tree.isSubtenantNow(a, t.app.topTenantUuid)).toBe(true);
    expect(tree.loads).toBe(loads);
    const bulk = tree.mark();
    tree.applyNotice("*"); // a bulk change (possibly of a) heard before the commit's callback
    expect(await tree.isSubtenant(t.app.db, b, t.app.topTenantUuid)).toBe(true); // reloaded
    tree.changed(a, b, bulk);
    expect(tree.isSubtenantNow(a, b)).toBeUndefined(); // dropped, not overwritten
  });
});
