// Which policies a caller sees, and how (wazo-auth's policy visibility): its tenants' own policies, the
// config-managed ones, and the shared policies of its scoping tenant and its ancestors. Policies
// that are not its own look like its own but read-only.
import { and, asc, eq, inArray, or, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { accesses, policies, policyAccesses } from "../../db/schema.ts";
import type { Caller } from "../../domain/caller.ts";
import { NotFound } from "../../domain/errors.ts";
import { isUuid } from "../../domain/validate.ts";
import { ancestorUuids, inSubtree } from "./tenant-tree.ts";

export type PolicyRow = typeof policies.$inferSelect;

export interface PolicyJson {
  uuid: string;
  tenant_uuid: string;
  name: string;
  slug: string;
  description: string | null;
  acl: string[];
  read_only: boolean;
  shared: boolean;
}

/**
 * The caller's view: its tenants T (the scoping tenant, and its descendants with `recurse`, as SQL)
 * and its ancestors, where shared policies also come from (a handful: the tree's depth).
 */
export interface PolicyScope {
  tenants: SQL;
  requested: string;
  ancestors: string[];
}

export async function policyScope(
  app: AppContext,
  caller: Caller,
  recurse: boolean,
  db: DbOrTx = app.db,
): Promise<PolicyScope> {
  const requested = caller.tenantUuid;
  if (!requested) throw new NotFound("policies");
  const tenants = recurse
    ? inSubtree(policies.tenantUuid, requested, app.topTenantUuid)
    : eq(policies.tenantUuid, requested);
  return { tenants, requested, ancestors: await ancestorUuids(db, requested) };
}

/** The policy's tenant is one of the caller's ancestors (never one of its own tenants T). */
export function fromAncestor(scope: PolicyScope): SQL {
  return scope.ancestors.length ? inArray(policies.tenantUuid, scope.ancestors) : sql`false`;
}

export function visibleCondition(scope: PolicyScope): SQL {
  return or(
    scope.tenants,
    eq(policies.configManaged, true),
    and(eq(policies.shared, true), or(eq(policies.tenantUuid, scope.requested), fromAncestor(scope))),
  )!;
}

/**
 * Whether a visible policy (one `visibleCondition` matched) belongs to the caller's tenants T: a
 * visible policy outside T lives in an ancestor (shared, or config-managed in the master tenant).
 */
function isOwn(scope: PolicyScope, p: PolicyRow): boolean {
  return !scope.ancestors.includes(p.tenantUuid);
}

/** A policy is read-only for the caller when it is config-managed or shared from above. */
export function isReadOnly(scope: PolicyScope, p: PolicyRow): boolean {
  return p.configManaged || (p.shared && !isOwn(scope, p));
}

export async function aclOf(db: DbOrTx, policyUuids: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(policyUuids.map((u) => [u, []]));
  if (policyUuids.length === 0) return out;
  const rows = await db
    .select({ policyUuid: policyAccesses.policyUuid, access: accesses.access })
    .from(policyAccesses)
    .innerJoin(accesses, eq(accesses.id, policyAccesses.accessId))
    .where(inArray(policyAccesses.policyUuid, policyUuids))
    .orderBy(asc(accesses.access));
  for (const r of rows) out.get(r.policyUuid)?.push(r.access);
  return out;
}

export async function policiesJson(db: DbOrTx, scope: PolicyScope | null, rows: PolicyRow[]): Promise<PolicyJson[]> {
  const acls = await aclOf(
    db,
    rows.map((r) => r.uuid),
  );
  return rows.map((p) => {
    const own = !scope || isOwn(scope, p);
    const exposedTenant = own ? p.tenantUuid : scope!.requested;
    return {
      uuid: p.uuid,
      tenant_uuid: exposedTenant,
      name: p.name,
      slug: p.slug,
      description: p.description,
      acl: acls.get(p.uuid) ?? [],
      read_only: scope ? isReadOnly(scope, p) : p.configManaged,
      shared: p.shared && exposedTenant === p.tenantUuid,
    };
  });
}

/**
 * A visible policy by uuid (searched in the whole subtree) or by slug (the scoping tenant's own
 * and read-only visible ones only, §6.12); 404 otherwise.
 */
export async function findVisiblePolicy(
  app: AppContext,
  caller: Caller,
  idOrSlug: string,
  db: DbOrTx = app.db,
): Promise<{ row: PolicyRow; scope: PolicyScope }> {
  const byUuid = isUuid(idOrSlug);
  const scope = await policyScope(app, caller, byUuid, db);
  const key = byUuid ? eq(policies.uuid, idOrSlug.toLowerCase()) : sql`lower(${policies.slug}) = lower(${idOrSlug})`;
  const rows = await db
    .select()
    .from(policies)
    .where(and(key, visibleCondition(scope)))
    .orderBy(sql`${policies.tenantUuid} = ${scope.requested} desc`);
  const row = rows[0];
  if (!row) throw new NotFound("policies", idOrSlug, `No such policy: "${idOrSlug}"`);
  return { row, scope };
}
