// Start-up policy sync (wazo-auth's start-up policy sync) is set-based: tenants inserted without their groups
// (as a bulk load or an older version would leave them) all get them in a few statements, and a
// second run changes nothing.
import { expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { execRows } from "../../src/db/index.ts";
import { syncPoliciesOnStartup } from "../../src/services/identity/policy-sync.ts";
import { describeEachDb } from "../helpers/app.ts";

describeEachDb(
  "start-up policy sync over many tenants",
  (get) => {
    const memberships = (app = get().app) =>
      execRows<{ tenant: string; group_name: string; policy: string | null; system: boolean }>(
        app.db,
        sql`select t.uuid as tenant, g.name as group_name, p.slug as policy, g.system_managed as system
          from auth_tenant t join auth_group g on g.tenant_uuid = t.uuid
          left join auth_group_policy gp on gp.group_uuid = g.uuid left join auth_policy p on p.uuid = gp.policy_uuid
          where t.slug like 'bulk%' order by 1, 2, 3`,
      );

    test("every tenant gets its all-users group and default groups with their policies, once", async () => {
      const t = get();
      await t.app.db.execute(sql`insert into auth_tenant (uuid, name, slug, parent_uuid)
      select gen_random_uuid()::text, 'bulk' || i, 'bulk' || i, ${t.app.topTenantUuid} from generate_series(1, 500) i`);
      expect(await memberships()).toEqual([]);
      await syncPoliciesOnStartup(t.app);
      const after = await memberships();
      expect(after.length).toBe(1000);
      const tenants = new Set(after.map((r) => r.tenant));
      expect(tenants.size).toBe(500);
      for (const r of after) {
        if (r.system) expect([r.group_name, r.policy]).toEqual([`wazo-all-users-tenant-${r.tenant}`, "everyone"]);
        else expect([r.group_name, r.policy]).toEqual(["admins", "admin_acl"]);
      }
      await syncPoliciesOnStartup(t.app);
      expect(await memberships()).toEqual(after);
    }, 60_000);
  },
  {
    config: {
      update_policy_on_startup: true,
      default_policies: { everyone: { acl: ["confd.users.me.read"] }, admin_acl: { acl: ["confd.#"] } },
      all_users_policies: { everyone: true },
      tenant_default_groups: { admins: { policies: { admin_acl: true } } },
    },
  },
);

describeEachDb("start-up policy sync of instances starting together", (get) => {
  test("two syncs at once on one database both succeed (the stock policies are created once)", async () => {
    const t = get();
    const stock = sql`delete from auth_policy where slug like 'tessera\\_%' and tenant_uuid = ${t.app.topTenantUuid}`;
    // On PostgreSQL the two run on two connections, as two instances would; each round starts bare.
    for (let round = 0; round < 5; round++) {
      await t.app.db.execute(stock);
      await Promise.all([syncPoliciesOnStartup(t.app), syncPoliciesOnStartup(t.app)]);
      const made = await execRows<{ n: number }>(
        t.app.db,
        sql`select count(*)::int as n from auth_policy where slug like 'tessera\\_%' and tenant_uuid = ${t.app.topTenantUuid}`,
      );
      expect(made[0]!.n).toBe(3);
    }
  }, 60_000);
});
