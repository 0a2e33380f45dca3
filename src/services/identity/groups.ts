// Groups (wazo-auth's group API, groups): per tenant; the system-managed all-users group of each
// tenant cannot be renamed, deleted, or have its members changed through the API. A member holds
// every entry of every policy of its groups, so joining, leaving or deleting a group follows the
// grant rule (§4.5) as attaching or detaching each of those policies would.
import { and, asc, desc, eq, ilike, ne, or, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { groupPolicies, groups, userGroups, users } from "../../db/schema.ts";
import { listPage } from "../../db/paging.ts";
import { changesOf, recordAudit, type AuditEntry } from "../audit/record.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { collection, searchPattern, type Collection, type ListParams } from "../../domain/collection.ts";
import { ApiError, Conflict, Forbidden, NotFound, orAbsent } from "../../domain/errors.ts";
import { publishEvent, routingKey } from "../events.ts";
import { requireGrant } from "./policies.ts";
import { aclOf } from "./policy-visibility.ts";
import { generateSlug } from "./slugs.ts";
import { listUsersWhere, type UserFilter, type UserJson } from "./users.ts";
import { requireVisibleUser, inCallerScope, tenantVisible } from "./visibility.ts";

export type GroupRow = typeof groups.$inferSelect;

export interface GroupJson {
  uuid: string;
  name: string;
  slug: string;
  tenant_uuid: string;
  read_only: boolean;
  system_managed: boolean;
}

export const groupJson = (g: GroupRow): GroupJson => ({
  uuid: g.uuid,
  name: g.name,
  slug: g.slug,
  tenant_uuid: g.tenantUuid,
  read_only: g.systemManaged,
  system_managed: g.systemManaged,
});

export type GroupFilter = "uuid" | "name" | "slug" | "user_uuid" | "read_only" | "policy_uuid" | "policy_slug";
const SORT = { name: groups.name, uuid: groups.uuid } as const;

export function groupConditions(params: ListParams<GroupFilter>): SQL[] {
  const c: SQL[] = [];
  const pattern = searchPattern(params.search);
  if (pattern) c.push(ilike(groups.name, pattern));
  const f = params.filters;
  if (f.uuid !== undefined) c.push(eq(groups.uuid, f.uuid));
  if (f.name !== undefined) c.push(eq(groups.name, f.name));
  if (f.slug !== undefined) c.push(eq(groups.slug, f.slug));
  if (f.read_only !== undefined)
    c.push(eq(groups.systemManaged, ["true", "1", "yes", "on"].includes(f.read_only.toLowerCase())));
  if (f.user_uuid !== undefined)
    c.push(
      sql`exists (select 1 from auth_user_group ug where ug.group_uuid = ${groups.uuid} and ug.user_uuid = ${f.user_uuid})`,
    );
  if (f.policy_uuid !== undefined)
    c.push(
      sql`exists (select 1 from auth_group_policy gp where gp.group_uuid = ${groups.uuid} and gp.policy_uuid = ${f.policy_uuid})`,
    );
  if (f.policy_slug !== undefined)
    c.push(
      sql`exists (select 1 from auth_group_policy gp join auth_policy p on p.uuid = gp.policy_uuid where gp.group_uuid = ${groups.uuid} and p.slug = ${f.policy_slug})`,
    );
  return c;
}

export async function listGroupsWhere(
  app: AppContext,
  base: SQL,
  params: ListParams<GroupFilter>,
): Promise<Collection<GroupJson>> {
  const where = and(base, ...groupConditions(params));
  const column = SORT[(params.order ?? "name") as keyof typeof SORT] ?? groups.name;
  const page = await listPage(
    app.db,
    groups,
    base,
    where,
    [params.direction === "desc" ? desc(column) : asc(column), asc(groups.uuid)],
    params,
  );
  return collection(page.rows.map(groupJson), page.filtered, page.total);
}

export async function listGroups(app: AppContext, caller: Caller, params: ListParams<GroupFilter>) {
  return listGroupsWhere(app, inCallerScope(app, caller, params.recurse, groups.tenantUuid), params);
}

/** The group when it lives in the caller's scoping tenant or below, else 404. */
export async function requireVisibleGroup(
  app: AppContext,
  caller: Caller,
  uuid: string,
  db: DbOrTx = app.db,
): Promise<GroupRow> {
  const [g] = await db.select().from(groups).where(eq(groups.uuid, uuid));
  if (!g || !(await tenantVisible(app, caller, g.tenantUuid, db))) throw new NotFound("groups", uuid);
  return g;
}

function forbidSystemGroup(g: GroupRow): void {
  if (g.systemManaged)
    throw new Forbidden("groups", `Forbidden group modification: "${g.uuid}"`, { uuid: g.uuid }, "forbidden-group");
}

/**
 * 403 naming the first entry of the group's policies the caller may not grant (`joining`: a new
 * member gains them all) or take away (leaving, or the group deleted: a member loses them, and
 * losing `!x` grants `x`).
 */
async function requireGroupGrant(tx: DbOrTx, caller: Caller, g: GroupRow, joining: boolean): Promise<void> {
  const attached = await tx
    .select({ uuid: groupPolicies.policyUuid })
    .from(groupPolicies)
    .where(eq(groupPolicies.groupUuid, g.uuid));
  const acl = [
    ...(
      await aclOf(
        tx,
        attached.map((p) => p.uuid),
      )
    ).values(),
  ].flat();
  if (joining) requireGrant(caller, acl, [], "groups");
  else requireGrant(caller, [], acl, "groups");
}

export async function checkUnique(
  tx: DbOrTx,
  tenantUuid: string,
  name: string,
  slug: string | null,
  except?: string,
): Promise<void> {
  const same =
    slug === null ? eq(groups.name, name) : or(eq(groups.name, name), sql`lower(${groups.slug}) = lower(${slug})`)!;
  const clash = await tx
    .select({ uuid: groups.uuid })
    .from(groups)
    .where(and(eq(groups.tenantUuid, tenantUuid), same, except ? ne(groups.uuid, except) : undefined))
    .limit(1);
  if (clash.length)
    throw new Conflict(
      "groups",
      { name: { constraint_id: "unique", constraint: name, message: `Group "${name}" already exists` } },
      `Group "${name}" already exists`,
    );
}

export function groupEvent(
  app: AppContext,
  tx: DbOrTx,
  name: string,
  key: string,
  g: GroupRow,
  data: Record<string, unknown> = {},
) {
  return publishEvent(app, tx, {
    name,
    routingKey: key,
    data: { uuid: g.uuid, tenant_uuid: g.tenantUuid, name: g.name, slug: g.slug, ...data },
    tenantUuid: g.tenantUuid,
    userUuid: "*",
    aggregate: `group:${g.uuid}`,
  });
}

export const groupRoutingKey = (g: GroupRow, suffix: string) =>
  routingKey(`auth.groups.{group_uuid}.${suffix}`, { group_uuid: g.uuid });

/** An entry about a group: `after` the fields set (null for a deletion), `before` their old values. */
export function groupAudit(
  action: string,
  g: GroupRow,
  after: Record<string, unknown> | null,
  before: Record<string, unknown> | null = null,
): AuditEntry {
  return {
    action,
    target: { kind: "group", uuid: g.uuid, tenantUuid: g.tenantUuid },
    changes: changesOf(before, after),
  };
}

export async function createGroup(
  app: AppContext,
  caller: Caller,
  input: { name: string; slug?: string },
): Promise<GroupJson> {
  const tenantUuid = caller.tenantUuid;
  if (!tenantUuid) throw new NotFound("tenants");
  return inTransaction(app, async (tx) => {
    const taken = async (s: string) =>
      (
        await tx
          .select({ uuid: groups.uuid })
          .from(groups)
          .where(and(eq(groups.tenantUuid, tenantUuid), sql`lower(${groups.slug}) = lower(${s})`))
          .limit(1)
      ).length > 0;
    const slug = input.slug ?? (await generateSlug(input.name, /[^a-zA-Z0-9_-]/g, 80, taken));
    await checkUnique(tx, tenantUuid, input.name, slug);
    const [row] = await tx.insert(groups).values({ name: input.name, slug, tenantUuid }).returning();
    await groupEvent(app, tx, "auth_group_created", groupRoutingKey(row!, "created"), row!);
    await recordAudit(app, tx, caller, groupAudit("group.create", row!, { name: row!.name, slug: row!.slug }));
    return groupJson(row!);
  });
}

export async function updateGroup(app: AppContext, caller: Caller, uuid: string, name: string): Promise<void> {
  await inTransaction(app, async (tx) => {
    const g = await requireVisibleGroup(app, caller, uuid, tx);
    forbidSystemGroup(g);
    await checkUnique(tx, g.tenantUuid, name, null, g.uuid);
    const [row] = await tx.update(groups).set({ name }).where(eq(groups.uuid, uuid)).returning();
    await groupEvent(app, tx, "auth_group_updated", groupRoutingKey(row!, "updated"), row!);
    await recordAudit(app, tx, caller, groupAudit("group.update", row!, { name: row!.name }, { name: g.name }));
  });
}

export async function deleteGroup(app: AppContext, caller: Caller, uuid: string): Promise<void> {
  await inTransaction(app, async (tx) => {
    const g = await orAbsent(requireVisibleGroup(app, caller, uuid, tx));
    if (!g) return; // absent or not visible: the desired state (D4 of docs/wazo-auth-differences.md)
    forbidSystemGroup(g);
    await requireGroupGrant(tx, caller, g, false);
    await tx.delete(groups).where(eq(groups.uuid, uuid));
    await groupEvent(app, tx, "auth_group_deleted", groupRoutingKey(g, "deleted"), g);
    await recordAudit(app, tx, caller, groupAudit("group.delete", g, null, { name: g.name, slug: g.slug }));
  });
}

export async function listGroupUsers(
  app: AppContext,
  caller: Caller,
  uuid: string,
  params: ListParams<UserFilter>,
): Promise<Collection<UserJson>> {
  const g = await requireVisibleGroup(app, caller, uuid);
  return listUsersWhere(
    app,
    sql`${users.uuid} in (select ug.user_uuid from auth_user_group ug where ug.group_uuid = ${g.uuid})`,
    params,
  );
}

/** PUT /groups/{g}/users/{u}: same tenant only; not the all-users group; idempotent. */
export async function addGroupUser(
  app: AppContext,
  caller: Caller,
  groupUuid: string,
  userUuid: string,
): Promise<void> {
  await inTransaction(app, async (tx) => {
    const user = await requireVisibleUser(app, caller, userUuid, tx);
    const g = await requireVisibleGroup(app, caller, groupUuid, tx);
    if (user.tenantUuid !== g.tenantUuid) {
      throw new ApiError(400, "missmatching-tenant", "Resources are not in the same tenant", "groups", {
        user_tenant_uuid: user.tenantUuid,
        group_tenant_uuid: g.tenantUuid,
      });
    }
    await joinGroup(app, tx, caller, g, userUuid);
  });
}

/** Absent or invisible group or user: nothing to remove, the desired state (D4 of docs/wazo-auth-differences.md). */
export async function removeGroupUser(
  app: AppContext,
  caller: Caller,
  groupUuid: string,
  userUuid: string,
): Promise<void> {
  await inTransaction(app, async (tx) => {
    const g = await orAbsent(requireVisibleGroup(app, caller, groupUuid, tx));
    if (!g) return;
    forbidSystemGroup(g);
    if (!(await orAbsent(requireVisibleUser(app, caller, userUuid, tx)))) return;
    await leaveGroup(app, tx, caller, g, userUuid);
  });
}

/**
 * Makes a user (of the group's tenant, checked by the caller) a member, in the caller's
 * transaction: not the all-users group; the grant rule; audited and evented when it was not one.
 * Shared by PUT /groups/{g}/users/{u} and SCIM's group members.
 */
export async function joinGroup(app: AppContext, tx: DbOrTx, caller: Caller, g: GroupRow, userUuid: string) {
  forbidSystemGroup(g);
  await requireGroupGrant(tx, caller, g, true);
  const added = await tx.insert(userGroups).values({ groupUuid: g.uuid, userUuid }).onConflictDoNothing().returning();
  if (!added.length) return;
  await recordAudit(app, tx, caller, groupAudit("group.user.add", g, { user_uuid: userUuid }));
  await groupEvent(
    app,
    tx,
    "auth_group_user_added",
    routingKey("auth.groups.{group_uuid}.users.{user_uuid}.created", { group_uuid: g.uuid, user_uuid: userUuid }),
    g,
    { user_uuid: userUuid },
  );
}

/** Ends a membership in the caller's transaction: the grant rule (leaving); audited and evented when it was one. */
export async function leaveGroup(app: AppContext, tx: DbOrTx, caller: Caller, g: GroupRow, userUuid: string) {
  forbidSystemGroup(g);
  await requireGroupGrant(tx, caller, g, false);
  const removed = await tx
    .delete(userGroups)
    .where(and(eq(userGroups.groupUuid, g.uuid), eq(userGroups.userUuid, userUuid)))
    .returning();
  if (!removed.length) return;
  await recordAudit(app, tx, caller, groupAudit("group.user.remove", g, null, { user_uuid: userUuid }));
  await groupEvent(
    app,
    tx,
    "auth_group_user_removed",
    routingKey("auth.groups.{group_uuid}.users.{user_uuid}.deleted", { group_uuid: g.uuid, user_uuid: userUuid }),
    g,
    { user_uuid: userUuid },
  );
}
