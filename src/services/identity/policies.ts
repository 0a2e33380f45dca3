// Policies (wazo-auth's policy API, policies): named ACLs owned by a tenant. A caller never grants an
// access it does not hold (§4.5), and read-only policies (§11.3) cannot be changed or deleted.
import { and, asc, desc, eq, ilike, inArray, ne, or, sql, type SQL } from "drizzle-orm";
import { grantCheck } from "../../domain/acl-grant.ts";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { accesses, policies, policyAccesses } from "../../db/schema.ts";
import { listPage } from "../../db/paging.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { collection, searchPattern, type Collection, type ListParams } from "../../domain/collection.ts";
import { ApiError, Conflict, Forbidden, NotFound, orAbsent } from "../../domain/errors.ts";
import { publishEvent, routingKey } from "../events.ts";
import { changesOf, recordAudit, type AuditEntry } from "../audit/record.ts";
import {
  aclOf,
  findVisiblePolicy,
  fromAncestor,
  isReadOnly,
  policiesJson,
  policyScope,
  visibleCondition,
  type PolicyJson,
  type PolicyRow,
  type PolicyScope,
} from "./policy-visibility.ts";
import { generateSlug } from "./slugs.ts";
import { ancestorUuids, inSubtree } from "./tenant-tree.ts";

export interface PolicyInput {
  name: string;
  slug?: string;
  description?: string | null;
  acl?: string[];
  shared?: boolean;
}

/** 403 naming the first access the caller may not grant (or take away). */
export function requireGrant(caller: Caller, toAdd: string[], toRemove: string[] = [], resource = "policies"): void {
  if (toAdd.length === 0 && toRemove.length === 0) return;
  const rule = grantCheck(caller.token.acl, { authId: caller.token.authId, sessionUuid: caller.token.sessionUuid });
  const denied = toAdd.find((a) => !rule.mayGrant(a)) ?? toRemove.find((a) => !rule.mayRevoke(a));
  if (denied !== undefined) throw new ApiError(403, "forbidden", "Forbidden", resource, { required_access: denied });
}

/** Names of the policies whose ACL every token carries (§4.4), looked up in the master tenant. */
export const defaultPolicyNames = (app: AppContext): string[] =>
  [app.config.default_user_policy, ...Object.values(app.config.backend_policies)].filter((n): n is string =>
    Boolean(n),
  );

/** Replaces a policy's ACL; access strings live once in the global auth_access dictionary. */
export async function writeAcl(tx: DbOrTx, policyUuid: string, acl: string[]): Promise<void> {
  await tx.delete(policyAccesses).where(eq(policyAccesses.policyUuid, policyUuid));
  const unique = [...new Set(acl)];
  if (unique.length === 0) return;
  await tx
    .insert(accesses)
    .values(unique.map((access) => ({ access })))
    .onConflictDoNothing();
  const rows = await tx.select().from(accesses).where(inArray(accesses.access, unique));
  await tx.insert(policyAccesses).values(rows.map((r) => ({ policyUuid, accessId: r.id })));
}

export function policyEvent(app: AppContext, tx: DbOrTx, kind: "created" | "updated" | "deleted", p: PolicyRow) {
  return publishEvent(app, tx, {
    name: `auth_policy_${kind}`,
    routingKey: routingKey(`auth.policies.{policy_uuid}.${kind}`, { policy_uuid: p.uuid }),
    data: { uuid: p.uuid, tenant_uuid: p.tenantUuid, name: p.name, slug: p.slug },
    tenantUuid: p.tenantUuid,
    userUuid: "*",
    aggregate: `policy:${p.uuid}`,
  });
}

export type PolicyFilter = "uuid" | "name" | "slug" | "user_uuid" | "group_uuid" | "tenant_uuid" | "read_only";
const SORT = {
  name: policies.name,
  slug: policies.slug,
  description: policies.description,
  uuid: policies.uuid,
} as const;

/** Search and strict filters shared by every policy list. */
export function policyConditions(params: ListParams<PolicyFilter>): SQL[] {
  const c: SQL[] = [];
  const pattern = searchPattern(params.search);
  if (pattern) c.push(or(ilike(policies.name, pattern), ilike(policies.description, pattern))!);
  const f = params.filters;
  if (f.uuid !== undefined) c.push(eq(policies.uuid, f.uuid));
  if (f.name !== undefined) c.push(eq(policies.name, f.name));
  if (f.slug !== undefined) c.push(eq(policies.slug, f.slug));
  if (f.tenant_uuid !== undefined) c.push(eq(policies.tenantUuid, f.tenant_uuid));
  if (f.user_uuid !== undefined)
    c.push(
      sql`exists (select 1 from auth_user_policy up where up.policy_uuid = ${policies.uuid} and up.user_uuid = ${f.user_uuid})`,
    );
  if (f.group_uuid !== undefined)
    c.push(
      sql`exists (select 1 from auth_group_policy gp where gp.policy_uuid = ${policies.uuid} and gp.group_uuid = ${f.group_uuid})`,
    );
  return c;
}

export async function listPoliciesWhere(
  app: AppContext,
  scope: PolicyScope,
  base: SQL,
  params: ListParams<PolicyFilter>,
  extra: SQL[] = [],
): Promise<Collection<PolicyJson>> {
  const where = and(base, ...policyConditions(params), ...extra);
  const column = SORT[(params.order ?? "name") as keyof typeof SORT] ?? policies.name;
  const page = await listPage(
    app.db,
    policies,
    base,
    where,
    [params.direction === "desc" ? desc(column) : asc(column), asc(policies.uuid)],
    params,
  );
  return collection(await policiesJson(app.db, scope, page.rows), page.filtered, page.total);
}

export async function listPolicies(
  app: AppContext,
  caller: Caller,
  params: ListParams<PolicyFilter>,
): Promise<Collection<PolicyJson>> {
  const scope = await policyScope(app, caller, params.recurse);
  const extra: SQL[] = [];
  const readOnly = params.filters.read_only?.toLowerCase();
  // Among visible policies, those outside T live in an ancestor (see isReadOnly).
  if (readOnly === "true")
    extra.push(or(eq(policies.configManaged, true), and(eq(policies.shared, true), fromAncestor(scope)))!);
  if (readOnly === "false") extra.push(and(scope.tenants, eq(policies.configManaged, false))!);
  return listPoliciesWhere(app, scope, visibleCondition(scope), params, extra);
}

export async function getPolicy(app: AppContext, caller: Caller, idOrSlug: string): Promise<PolicyJson> {
  const { row, scope } = await findVisiblePolicy(app, caller, idOrSlug);
  return (await policiesJson(app.db, scope, [row]))[0]!;
}

const SLUG_DISALLOWED = /[^a-zA-Z0-9_-]/g;

function duplicate(name: string): Conflict {
  return new Conflict(
    "policies",
    { name: { constraint_id: "unique", constraint: name, message: `Policy "${name}" already exists` } },
    `Policy "${name}" already exists`,
  );
}

/** §11.2: unique name and slug per tenant, and no clash with shared policies above or below. */
async function checkDuplicates(
  tx: DbOrTx,
  topTenantUuid: string,
  tenantUuid: string,
  name: string,
  slug: string,
  shared: boolean,
): Promise<void> {
  const same = or(eq(policies.name, name), sql`lower(${policies.slug}) = lower(${slug})`)!;
  const inTenant = await tx
    .select({ uuid: policies.uuid })
    .from(policies)
    .where(and(eq(policies.tenantUuid, tenantUuid), same))
    .limit(1);
  if (inTenant.length) throw duplicate(name);
  const above = await ancestorUuids(tx, tenantUuid);
  if (above.length) {
    const sharedAbove = await tx
      .select({ uuid: policies.uuid })
      .from(policies)
      .where(and(inArray(policies.tenantUuid, above), eq(policies.shared, true), same))
      .limit(1);
    if (sharedAbove.length) throw duplicate(name);
  }
  if (shared) {
    const clash = await tx
      .select({ uuid: policies.uuid })
      .from(policies)
      .where(and(inSubtree(policies.tenantUuid, tenantUuid, topTenantUuid), same))
      .limit(1);
    if (clash.length) throw duplicate(name);
  }
}

export async function createPolicy(app: AppContext, caller: Caller, input: PolicyInput): Promise<PolicyJson> {
  const acl = input.acl ?? [];
  requireGrant(caller, acl);
  const tenantUuid = caller.tenantUuid;
  if (!tenantUuid) throw new NotFound("tenants");
  return inTransaction(app, async (tx) => {
    const taken = async (s: string) =>
      (
        await tx
          .select({ uuid: policies.uuid })
          .from(policies)
          .where(and(eq(policies.tenantUuid, tenantUuid), sql`lower(${policies.slug}) = lower(${s})`))
          .limit(1)
      ).length > 0;
    const slug = input.slug ?? (await generateSlug(input.name, SLUG_DISALLOWED, 80, taken));
    await checkDuplicates(tx, app.topTenantUuid, tenantUuid, input.name, slug, input.shared ?? false);
    const [row] = await tx
      .insert(policies)
      .values({
        name: input.name,
        slug,
        description: input.description ?? null,
        tenantUuid,
        shared: input.shared ?? false,
      })
      .returning();
    await writeAcl(tx, row!.uuid, acl);
    await policyEvent(app, tx, "created", row!);
    await recordAudit(app, tx, caller, policyAudit("policy.create", row!, null, { ...policyFields(row!), acl }));
    const scope = await policyScope(app, caller, false, tx);
    return (await policiesJson(tx, scope, [row!]))[0]!;
  });
}

/** The policy when the caller may change it: visible, not read-only. */
async function writablePolicy(app: AppContext, caller: Caller, idOrSlug: string, tx: DbOrTx): Promise<PolicyRow> {
  const { row, scope } = await findVisiblePolicy(app, caller, idOrSlug, tx);
  if (isReadOnly(scope, row))
    throw new Forbidden(
      "policies",
      `Forbidden policy modification: "${row.uuid}"`,
      { uuid: row.uuid },
      "forbidden-policy",
    );
  return row;
}

/** Full replacement: name, description and the whole ACL (omitted → empty); slug and shared never change. */
export async function updatePolicy(
  app: AppContext,
  caller: Caller,
  idOrSlug: string,
  input: PolicyInput,
): Promise<void> {
  const acl = input.acl ?? [];
  await inTransaction(app, async (tx) => {
    const row = await writablePolicy(app, caller, idOrSlug, tx);
    const current = (await aclOf(tx, [row.uuid])).get(row.uuid) ?? [];
    requireGrant(
      caller,
      acl.filter((a) => !current.includes(a)),
      current.filter((a) => !acl.includes(a)),
    );
    // Renamed into (or out of) the default policy every token carries: every user gains the whole
    // new ACL (or loses the whole old one), not only the entries that changed.
    const isDefault = (name: string) => row.tenantUuid === app.topTenantUuid && defaultPolicyNames(app).includes(name);
    if (isDefault(input.name) && !isDefault(row.name)) requireGrant(caller, acl);
    if (isDefault(row.name) && !isDefault(input.name)) requireGrant(caller, [], current);
    const clash = await tx
      .select({ uuid: policies.uuid })
      .from(policies)
      .where(and(eq(policies.tenantUuid, row.tenantUuid), eq(policies.name, input.name), ne(policies.uuid, row.uuid)))
      .limit(1);
    if (clash.length) throw duplicate(input.name);
    const [updated] = await tx
      .update(policies)
      .set({ name: input.name, description: input.description ?? null })
      .where(eq(policies.uuid, row.uuid))
      .returning();
    await writeAcl(tx, row.uuid, acl);
    await policyEvent(app, tx, "updated", updated!);
    await recordAudit(
      app,
      tx,
      caller,
      policyAudit("policy.update", row, { ...policyFields(row), acl: current }, { ...policyFields(updated!), acl }),
    );
  });
}

export async function deletePolicy(app: AppContext, caller: Caller, idOrSlug: string): Promise<void> {
  await inTransaction(app, async (tx) => {
    const row = await orAbsent(writablePolicy(app, caller, idOrSlug, tx));
    if (!row) return; // absent or not visible: the desired state (D4 of docs/wazo-auth-differences.md)
    const acl = (await aclOf(tx, [row.uuid])).get(row.uuid) ?? [];
    requireGrant(caller, [], acl);
    await tx.delete(policies).where(eq(policies.uuid, row.uuid));
    await recordAudit(app, tx, caller, policyAudit("policy.delete", row, { ...policyFields(row), acl }, null));
    await policyEvent(app, tx, "deleted", row);
  });
}

/**
 * PUT /policies/{p}/acl/{access}: the desired state, so an entry already there is a no-op. Same
 * rule as the whole-policy edit: read-only policies (config-managed, shared from above) are 403.
 */
export async function addAccess(app: AppContext, caller: Caller, idOrSlug: string, access: string): Promise<void> {
  await changeAccess(app, caller, idOrSlug, access, true);
}

export async function removeAccess(app: AppContext, caller: Caller, idOrSlug: string, access: string): Promise<void> {
  await changeAccess(app, caller, idOrSlug, access, false);
}

async function changeAccess(
  app: AppContext,
  caller: Caller,
  idOrSlug: string,
  access: string,
  add: boolean,
): Promise<void> {
  await inTransaction(app, async (tx) => {
    const row = add
      ? await writablePolicy(app, caller, idOrSlug, tx)
      : await orAbsent(writablePolicy(app, caller, idOrSlug, tx));
    if (!row) return; // removing from an absent or unseen policy: the desired state (D4 of docs/wazo-auth-differences.md)
    if (add) requireGrant(caller, [access]);
    else requireGrant(caller, [], [access]);
    const current = (await aclOf(tx, [row.uuid])).get(row.uuid) ?? [];
    if (current.includes(access) === add) return;
    await writeAcl(tx, row.uuid, add ? [...current, access] : current.filter((a) => a !== access));
    await policyEvent(app, tx, "updated", row);
    await recordAudit(app, tx, caller, {
      action: add ? "policy.access.add" : "policy.access.remove",
      target: { kind: "policy", uuid: row.uuid, tenantUuid: row.tenantUuid },
      changes: [{ field: "acl", old: add ? null : access, new: add ? access : null }],
    });
  });
}

const policyFields = (p: PolicyRow) => ({ name: p.name, slug: p.slug, description: p.description, shared: p.shared });

/** An entry about a policy; its ACL compared whole (an ACL entry is not a secret: a pattern of permissions). */
function policyAudit(
  action: string,
  p: PolicyRow,
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
): AuditEntry {
  return {
    action,
    target: { kind: "policy", uuid: p.uuid, tenantUuid: p.tenantUuid },
    changes: changesOf(before, after),
  };
}
