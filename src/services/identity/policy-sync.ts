// Groups and policies every tenant gets (wazo-auth's groups, start-up policy sync): the stock policies
// (stock-policies.ts), the config-managed `default_policies`, the system-managed all-users group of
// each tenant with the `all_users_policies`, and the `tenant_default_groups` — at tenant creation and
// at start-up.
import { and, eq, inArray, notInArray, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { execRows, type DbOrTx } from "../../db/index.ts";
import { groupPolicies, groups, policies, userPolicies } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { writeAcl } from "./policies.ts";
import { isStockPolicy, stockPolicies } from "./stock-policies.ts";

/**
 * Policy uuids by slug, in the master tenant only (where config-managed policies live): a policy a
 * tenant administrator gives a configured slug in its own tenant must not join every tenant's groups.
 */
async function policiesBySlug(app: AppContext, tx: DbOrTx, slugs: string[]): Promise<Map<string, string>> {
  if (slugs.length === 0) return new Map();
  const rows = await tx
    .select({ uuid: policies.uuid, slug: policies.slug, configManaged: policies.configManaged })
    .from(policies)
    .where(and(inArray(policies.slug, slugs), eq(policies.tenantUuid, app.topTenantUuid)));
  // Prefer config-managed policies when a slug exists in several tenants.
  rows.sort((a, b) => Number(b.configManaged) - Number(a.configManaged));
  const out = new Map<string, string>();
  for (const r of rows) if (!out.has(r.slug)) out.set(r.slug, r.uuid);
  return out;
}

/**
 * The tenants' groups named `name(tenant)`, created where missing, with the configured policies
 * switched on or off: one statement per group kind and policy, whatever the number of tenants
 * (`tenant` limits it to one tenant, at its creation; none means all of them, at start-up).
 */
async function ensureGroups(
  app: AppContext,
  tx: DbOrTx,
  name: SQL,
  systemManaged: boolean,
  wanted: Record<string, boolean>,
  tenant: string | undefined,
): Promise<void> {
  const only = tenant === undefined ? sql`true` : sql`t.uuid = ${tenant}`;
  // Only the missing ones are inserted (an anti-join): at start-up nearly every tenant has its
  // groups already, and letting `on conflict` find that out row by row costs ~1 s per 100,000
  // tenants. `on conflict` stays for a group created concurrently.
  await execRows(
    tx,
    sql`insert into auth_group (name, slug, tenant_uuid, system_managed)
    select ${name}, ${name}, t.uuid, ${systemManaged} from auth_tenant t where ${only}
      and not exists (select 1 from auth_group e where e.tenant_uuid = t.uuid and e.name = ${name})
    on conflict do nothing`,
  );
  const bySlug = await policiesBySlug(app, tx, Object.keys(wanted));
  const theGroups = sql`select g.uuid from auth_group g join auth_tenant t on t.uuid = g.tenant_uuid and g.name = ${name} where ${only}`;
  for (const [slug, on] of Object.entries(wanted)) {
    const policyUuid = bySlug.get(slug);
    if (!policyUuid) continue;
    if (on)
      await execRows(
        tx,
        sql`insert into auth_group_policy (group_uuid, policy_uuid) select uuid, ${policyUuid} from (${theGroups}) g
          where not exists (select 1 from auth_group_policy e where e.group_uuid = g.uuid and e.policy_uuid = ${policyUuid})
          on conflict do nothing`,
      );
    else
      await execRows(
        tx,
        sql`delete from auth_group_policy where policy_uuid = ${policyUuid} and group_uuid in (${theGroups})`,
      );
  }
}

/** pg_advisory_xact_lock key of the start-up policy sync. */
const POLICY_SYNC_LOCK = 7_302_515_978;

const ALL_USERS_GROUP = sql`'wazo-all-users-tenant-' || t.uuid`;

/**
 * The all-users groups' policies: the configured ones only. A stock policy joins them only when
 * configured (`all_users_policies: {tessera_user: true}`): out of the box a user's ACL is what
 * wazo-auth would give it (plus `mfa.self_service`'s one entry, added to the token, not a policy).
 */
const allUsersPolicies = (app: AppContext): Record<string, boolean> => app.config.all_users_policies;

/** The all-users group and default groups of one tenant, or of every tenant, with their configured policies. */
async function ensureTenantGroups(app: AppContext, tx: DbOrTx, tenant: string | undefined): Promise<void> {
  await ensureGroups(app, tx, ALL_USERS_GROUP, true, allUsersPolicies(app), tenant);
  for (const [slug, spec] of Object.entries(app.config.tenant_default_groups))
    await ensureGroups(app, tx, sql`${slug}::text`, false, spec.policies, tenant);
}

/** Called by tenant creation inside its transaction. */
export async function setupTenantGroups(app: AppContext, tx: DbOrTx, tenantUuid: string): Promise<void> {
  await ensureTenantGroups(app, tx, tenantUuid);
}

/** A read-only policy of the master tenant, created or brought up to date (config-managed or stock). */
async function upsertManagedPolicy(
  app: AppContext,
  tx: DbOrTx,
  slug: string,
  spec: { description: string; shared: boolean; acl: string[] },
): Promise<void> {
  const [existing] = await tx
    .select()
    .from(policies)
    .where(and(eq(policies.tenantUuid, app.topTenantUuid), sql`lower(${policies.slug}) = lower(${slug})`));
  const values = { name: slug, description: spec.description, configManaged: true, shared: spec.shared };
  const uuid = existing
    ? (await tx.update(policies).set(values).where(eq(policies.uuid, existing.uuid)).returning())[0]!.uuid
    : (
        await tx
          .insert(policies)
          .values({ ...values, slug, tenantUuid: app.topTenantUuid })
          .returning()
      )[0]!.uuid;
  await writeAcl(tx, uuid, spec.acl);
}

/** At every start: the stock policies; then wazo-auth's start-up sync when `update_policy_on_startup` is on. */
export async function syncPoliciesOnStartup(app: AppContext): Promise<void> {
  await inTransaction(app, async (tx) => {
    // Instances starting together on one database sync one after the other: each reads, then
    // creates what is missing (the stock policies at least), which two at once would both create.
    await tx.execute(sql`select pg_advisory_xact_lock(${POLICY_SYNC_LOCK})`);
    for (const [slug, spec] of Object.entries(stockPolicies(app)))
      await upsertManagedPolicy(app, tx, slug, { ...spec, shared: false });
    if (!app.config.update_policy_on_startup) return;
    const configured = app.config.default_policies;
    for (const [slug, spec] of Object.entries(configured)) {
      if (isStockPolicy(slug)) continue; // the service's own, whatever the configuration says
      await upsertManagedPolicy(app, tx, slug, {
        description: spec.description ?? "Automatically created",
        shared: spec.shared,
        acl: spec.acl,
      });
    }
    // Config-managed policies not enabled in `all_users_policies` leave the all-users groups (step 2).
    const enabled = Object.entries(allUsersPolicies(app))
      .filter(([, on]) => on)
      .map(([slug]) => slug);
    const notListed = tx
      .select({ uuid: policies.uuid })
      .from(policies)
      .where(and(eq(policies.configManaged, true), notInArray(policies.slug, enabled)));
    const allUsersGroups = tx.select({ uuid: groups.uuid }).from(groups).where(eq(groups.systemManaged, true));
    await tx
      .delete(groupPolicies)
      .where(and(inArray(groupPolicies.policyUuid, notListed), inArray(groupPolicies.groupUuid, allUsersGroups)));
    // Config-managed policies gone from `default_policies` are deleted unless still in use (step 4).
    const listed = [...Object.keys(configured), ...Object.keys(stockPolicies(app))];
    const orphans = await tx
      .select({ uuid: policies.uuid })
      .from(policies)
      .where(and(eq(policies.configManaged, true), listed.length ? notInArray(policies.slug, listed) : undefined));
    for (const { uuid } of orphans) {
      const usedByUser = await tx.select().from(userPolicies).where(eq(userPolicies.policyUuid, uuid)).limit(1);
      const usedByGroup = await tx.select().from(groupPolicies).where(eq(groupPolicies.policyUuid, uuid)).limit(1);
      if (!usedByUser.length && !usedByGroup.length) await tx.delete(policies).where(eq(policies.uuid, uuid));
    }
    await ensureTenantGroups(app, tx, undefined);
  });
}
