// Groups and policies every tenant gets (COMPATIBILITY.md §11.1, §11.4): the config-managed
// `default_policies`, the system-managed all-users group of each tenant with the
// `all_users_policies`, and the `tenant_default_groups` — at tenant creation and at start-up.
import { and, eq, inArray, notInArray, sql } from "drizzle-orm";
import type { AppContext } from "../../context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { groupPolicies, groups, policies, tenants, userPolicies } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { writeAcl } from "./policies.ts";

export const allUsersGroupName = (tenantUuid: string) => `wazo-all-users-tenant-${tenantUuid}`;

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

async function setGroupPolicies(app: AppContext, tx: DbOrTx, groupUuid: string, wanted: Record<string, boolean>): Promise<void> {
  const bySlug = await policiesBySlug(app, tx, Object.keys(wanted));
  for (const [slug, on] of Object.entries(wanted)) {
    const policyUuid = bySlug.get(slug);
    if (!policyUuid) continue;
    if (on) await tx.insert(groupPolicies).values({ groupUuid, policyUuid }).onConflictDoNothing();
    else await tx.delete(groupPolicies).where(and(eq(groupPolicies.groupUuid, groupUuid), eq(groupPolicies.policyUuid, policyUuid)));
  }
}

/** The tenant's all-users group and default groups, with their configured policies. */
async function ensureTenantGroups(app: AppContext, tx: DbOrTx, tenantUuid: string): Promise<void> {
  const name = allUsersGroupName(tenantUuid);
  await tx.insert(groups).values({ name, slug: name, tenantUuid, systemManaged: true }).onConflictDoNothing();
  const [allUsers] = await tx.select({ uuid: groups.uuid }).from(groups).where(and(eq(groups.tenantUuid, tenantUuid), eq(groups.name, name)));
  await setGroupPolicies(app, tx, allUsers!.uuid, app.config.all_users_policies);
  for (const [slug, spec] of Object.entries(app.config.tenant_default_groups)) {
    await tx.insert(groups).values({ name: slug, slug, tenantUuid }).onConflictDoNothing();
    const [g] = await tx.select({ uuid: groups.uuid }).from(groups).where(and(eq(groups.tenantUuid, tenantUuid), eq(groups.name, slug)));
    if (g) await setGroupPolicies(app, tx, g.uuid, spec.policies);
  }
}

/** Called by tenant creation inside its transaction. */
export async function setupTenantGroups(app: AppContext, tx: DbOrTx, tenantUuid: string): Promise<void> {
  await ensureTenantGroups(app, tx, tenantUuid);
}

/** §11.4, when `update_policy_on_startup` is on. */
export async function syncPoliciesOnStartup(app: AppContext): Promise<void> {
  if (!app.config.update_policy_on_startup) return;
  await inTransaction(app, async (tx) => {
    const configured = app.config.default_policies;
    for (const [slug, spec] of Object.entries(configured)) {
      const [existing] = await tx.select().from(policies).where(and(eq(policies.tenantUuid, app.topTenantUuid), sql`lower(${policies.slug}) = lower(${slug})`));
      const values = { name: slug, description: spec.description ?? "Automatically created", configManaged: true, shared: spec.shared };
      const uuid = existing
        ? (await tx.update(policies).set(values).where(eq(policies.uuid, existing.uuid)).returning())[0]!.uuid
        : (await tx.insert(policies).values({ ...values, slug, tenantUuid: app.topTenantUuid }).returning())[0]!.uuid;
      await writeAcl(tx, uuid, spec.acl);
    }
    // Config-managed policies not enabled in `all_users_policies` leave the all-users groups (step 2).
    const enabled = Object.entries(app.config.all_users_policies).filter(([, on]) => on).map(([slug]) => slug);
    const notListed = tx.select({ uuid: policies.uuid }).from(policies).where(and(eq(policies.configManaged, true), enabled.length ? notInArray(policies.slug, enabled) : undefined));
    const allUsersGroups = tx.select({ uuid: groups.uuid }).from(groups).where(eq(groups.systemManaged, true));
    await tx.delete(groupPolicies).where(and(inArray(groupPolicies.policyUuid, notListed), inArray(groupPolicies.groupUuid, allUsersGroups)));
    // Config-managed policies gone from `default_policies` are deleted unless still in use (step 4).
    const listed = Object.keys(configured);
    const orphans = await tx
      .select({ uuid: policies.uuid })
      .from(policies)
      .where(and(eq(policies.configManaged, true), listed.length ? notInArray(policies.slug, listed) : undefined));
    for (const { uuid } of orphans) {
      const usedByUser = await tx.select().from(userPolicies).where(eq(userPolicies.policyUuid, uuid)).limit(1);
      const usedByGroup = await tx.select().from(groupPolicies).where(eq(groupPolicies.policyUuid, uuid)).limit(1);
      if (!usedByUser.length && !usedByGroup.length) await tx.delete(policies).where(eq(policies.uuid, uuid));
    }
    const allTenants = await tx.select({ uuid: tenants.uuid }).from(tenants);
    for (const t of allTenants) await ensureTenantGroups(app, tx, t.uuid);
  });
}
