// SCIM Groups (RFC 7643 §4.2) of the token's tenant: its groups but the system-managed all-users
// one. `members` ↔ membership; a member must be a SCIM-visible user of the same tenant (a reference
// to anyone else is a 400 and nothing is written), and joining or leaving follows the grant rule
// (the token must be able to grant every entry of the group's policies) through the group service.
import { and, asc, desc, eq, inArray, sql, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import { groups, scimGroups, userGroups, users } from "../../db/schema.ts";
import type { DbOrTx } from "../../db/index.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { keyOf, matches } from "./filter-match.ts";
import { recordAudit } from "../audit/record.ts";
import {
  checkUnique,
  deleteGroup,
  groupAudit,
  groupEvent,
  groupRoutingKey,
  joinGroup,
  leaveGroup,
  type GroupRow,
} from "../identity/groups.ts";
import { generateSlug } from "../identity/slugs.ts";
import { CAPS, text } from "../../domain/strings.ts";
import { invalidSyntax, invalidValue, scimNotFound } from "./errors.ts";
import { requireMatch, stampVersion } from "./etag.ts";
import { filterSql } from "./filter-sql.ts";
import { listResponse, sortResources, type ScimQuery } from "./list.ts";
import { applyPatch, patchOpsOf } from "./patch.ts";
import { project } from "./projection.ts";
import { GROUP_SCHEMA } from "./schemas.ts";
import { visibleUserIds, type ScimScope } from "./users.ts";

type Json = Record<string, unknown>;

const g = alias(groups, "g");

const visible = (caller: Caller): SQL => and(eq(g.tenantUuid, caller.tenantUuid ?? ""), eq(g.systemManaged, false))!;

async function requireGroupRow(db: DbOrTx, caller: Caller, id: string): Promise<GroupRow> {
  const [row] = await db
    .select()
    .from(g)
    .where(and(visible(caller), eq(g.uuid, id)));
  if (!row) throw scimNotFound("Group", id);
  return row as GroupRow;
}

interface GroupState {
  displayName: string;
  externalId: string | null;
  members: string[];
}

const groupName = text(CAPS.groupName, { min: 1 });

function groupStateOf(body: unknown): GroupState {
  if (!body || typeof body !== "object" || Array.isArray(body)) throw invalidSyntax("A Group must be a JSON object");
  const b = body as Json;
  const get = (n: string) => {
    const k = keyOf(b, n);
    return k === undefined ? undefined : b[k];
  };
  const name = groupName.safeParse(get("displayName"));
  if (!name.success) throw invalidValue("displayName is required (a non-empty string)");
  const externalId = get("externalId");
  if (externalId !== undefined && externalId !== null && typeof externalId !== "string")
    throw invalidValue("externalId must be a string");
  const members = get("members") ?? [];
  if (!Array.isArray(members)) throw invalidValue("members must be an array");
  const ids = members.map((m) => {
    const v = m && typeof m === "object" ? (m as Json)[keyOf(m as Json, "value") ?? "value"] : undefined;
    if (typeof v !== "string" || v === "") throw invalidValue("each member needs a value (a User id)");
    return v;
  });
  return {
    displayName: name.data,
    externalId: typeof externalId === "string" && externalId !== "" ? externalId : null,
    members: [...new Set(ids)],
  };
}

async function resourcesOf(db: DbOrTx, rows: GroupRow[], base: string, withMembers: boolean): Promise<Json[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.uuid);
  const [kept, member] = await Promise.all([
    db.select().from(scimGroups).where(inArray(scimGroups.groupUuid, ids)),
    withMembers
      ? db
          .select({ groupUuid: userGroups.groupUuid, uuid: users.uuid, username: users.username })
          .from(userGroups)
          .innerJoin(users, eq(users.uuid, userGroups.userUuid))
          .where(inArray(userGroups.groupUuid, ids))
          .orderBy(asc(users.username))
      : Promise.resolve([]),
  ]);
  return rows.map((row) => {
    const s = kept.find((k) => k.groupUuid === row.uuid);
    const r: Json = {
      schemas: [GROUP_SCHEMA],
      id: row.uuid,
      ...(s?.externalId ? { externalId: s.externalId } : {}),
      displayName: row.name,
      members: member
        .filter((m) => m.groupUuid === row.uuid)
        .map((m) => ({ value: m.uuid, display: m.username ?? "", $ref: `${base}/Users/${m.uuid}`, type: "User" })),
      meta: {
        resourceType: "Group",
        ...(s ? { created: s.createdAt.toISOString(), lastModified: s.updatedAt.toISOString() } : {}),
        location: `${base}/Groups/${row.uuid}`,
      },
    };
    if (withMembers) stampVersion(r);
    else delete r.members;
    return r;
  });
}

const wantsMembers = (q: ScimQuery) => !q.excluded?.some((p) => p.attr.toLowerCase() === "members" && p.sub === null);

export async function getScimGroup(scope: ScimScope, id: string, q?: ScimQuery): Promise<Json> {
  const row = await requireGroupRow(scope.app.db, scope.caller, id);
  const [r] = await resourcesOf(scope.app.db, [row], scope.base, true);
  return q ? project(r!, q.attributes, q.excluded) : r!;
}

/** GET /Groups: as GET /Users (filter in SQL where it can, else in memory); `excludedAttributes=members` reads none. */
export async function listScimGroups(scope: ScimScope, q: ScimQuery): Promise<Json> {
  const { app, caller, base } = scope;
  const compiled = q.filter ? filterSql(q.filter, "Group") : null;
  const where = compiled ? and(visible(caller), compiled.sql)! : visible(caller);
  const sortKey = q.sortBy ? `${q.sortBy.attr}${q.sortBy.sub ? `.${q.sortBy.sub}` : ""}`.toLowerCase() : "id";
  const column = sortKey === "id" ? g.uuid : sortKey === "displayname" ? g.name : undefined;
  const members = wantsMembers(q);
  if ((!q.filter || compiled?.exact) && column) {
    const [{ total }] = (await app.db.select({ total: sql<number>`count(*)::int` }).from(g).where(where)) as [
      { total: number },
    ];
    const rows =
      q.count === 0
        ? []
        : ((await app.db
            .select()
            .from(g)
            .where(where)
            .orderBy(q.descending ? desc(column) : asc(column), asc(g.uuid))
            .limit(q.count)
            .offset(q.startIndex - 1)) as GroupRow[]);
    const resources = (await resourcesOf(app.db, rows, base, members)).map((r) => project(r, q.attributes, q.excluded));
    return listResponse(resources, total, q.startIndex);
  }
  const rows = (await app.db.select().from(g).where(where).orderBy(asc(g.uuid))) as GroupRow[];
  let all = await resourcesOf(app.db, rows, base, true);
  if (q.filter) all = all.filter((r) => matches(q.filter!, r, "Group"));
  all = sortResources(all, q, "Group");
  const page = all.slice(q.startIndex - 1, q.startIndex - 1 + q.count);
  return listResponse(
    page.map((r) => project(r, q.attributes, q.excluded)),
    all.length,
    q.startIndex,
  );
}

async function keep(tx: DbOrTx, row: GroupRow, state: GroupState): Promise<void> {
  await tx
    .insert(scimGroups)
    .values({ groupUuid: row.uuid, tenantUuid: row.tenantUuid, externalId: state.externalId })
    .onConflictDoUpdate({
      target: scimGroups.groupUuid,
      set: { externalId: state.externalId, updatedAt: sql`now()` },
    });
}

/** Members become exactly `wanted`: each a user of the token's tenant, else 400 and nothing written. */
async function writeMembers(scope: ScimScope, tx: DbOrTx, row: GroupRow, wanted: string[]): Promise<void> {
  const known = await visibleUserIds(tx, scope.caller, wanted);
  const stranger = wanted.find((id) => !known.has(id));
  if (stranger !== undefined) throw invalidValue(`member ${stranger} is not a User of this service provider`);
  const current = (
    await tx.select({ uuid: userGroups.userUuid }).from(userGroups).where(eq(userGroups.groupUuid, row.uuid))
  ).map((m) => m.uuid);
  for (const id of wanted) if (!current.includes(id)) await joinGroup(scope.app, tx, scope.caller, row, id);
  for (const id of current) if (!wanted.includes(id)) await leaveGroup(scope.app, tx, scope.caller, row, id);
}

export async function createScimGroup(scope: ScimScope, body: unknown): Promise<Json> {
  const { app, caller } = scope;
  const state = groupStateOf(body);
  const tenantUuid = caller.tenantUuid!;
  return inTransaction(app, async (tx) => {
    const taken = async (s: string) =>
      (
        await tx
          .select({ uuid: groups.uuid })
          .from(groups)
          .where(and(eq(groups.tenantUuid, tenantUuid), sql`lower(${groups.slug}) = lower(${s})`))
          .limit(1)
      ).length > 0;
    const slug = await generateSlug(state.displayName, /[^a-zA-Z0-9_-]/g, 80, taken);
    await checkUnique(tx, tenantUuid, state.displayName, slug);
    const [row] = await tx.insert(groups).values({ name: state.displayName, slug, tenantUuid }).returning();
    await groupEvent(app, tx, "auth_group_created", groupRoutingKey(row!, "created"), row!);
    await recordAudit(app, tx, caller, groupAudit("group.create", row!, { name: row!.name, slug: row!.slug }));
    await keep(tx, row!, state);
    await writeMembers(scope, tx, row!, state.members);
    const [r] = await resourcesOf(tx, [row!], scope.base, true);
    return r!;
  });
}

async function writeState(scope: ScimScope, tx: DbOrTx, before: GroupRow, state: GroupState): Promise<GroupRow> {
  const { app, caller } = scope;
  let row = before;
  if (state.displayName !== before.name) {
    await checkUnique(tx, before.tenantUuid, state.displayName, null, before.uuid);
    [row] = (await tx
      .update(groups)
      .set({ name: state.displayName })
      .where(eq(groups.uuid, before.uuid))
      .returning()) as [GroupRow];
    await groupEvent(app, tx, "auth_group_updated", groupRoutingKey(row, "updated"), row);
    await recordAudit(app, tx, caller, groupAudit("group.update", row, { name: row.name }, { name: before.name }));
  }
  await keep(tx, row, state);
  await writeMembers(scope, tx, row, state.members);
  return row;
}

export async function replaceScimGroup(scope: ScimScope, id: string, body: unknown, ifMatch?: string): Promise<Json> {
  const state = groupStateOf(body);
  return inTransaction(scope.app, async (tx) => {
    const before = await requireGroupRow(tx, scope.caller, id);
    const [current] = await resourcesOf(tx, [before], scope.base, true);
    requireMatch(ifMatch, (current!.meta as Json).version as string);
    const row = await writeState(scope, tx, before, state);
    return (await resourcesOf(tx, [row], scope.base, true))[0]!;
  });
}

/**
 * PATCH /Groups/{id}: 204 with no body unless the client asks for attributes (RFC 7644 §3.5.2:
 * either is allowed; Entra and Okta both accept 204, and a large group is not read back).
 */
export async function patchScimGroup(scope: ScimScope, id: string, body: unknown, ifMatch?: string): Promise<Json> {
  const ops = patchOpsOf(body);
  return inTransaction(scope.app, async (tx) => {
    const before = await requireGroupRow(tx, scope.caller, id);
    const [current] = await resourcesOf(tx, [before], scope.base, true);
    requireMatch(ifMatch, (current!.meta as Json).version as string);
    const row = await writeState(scope, tx, before, groupStateOf(applyPatch(current!, ops, "Group")));
    return (await resourcesOf(tx, [row], scope.base, true))[0]!;
  });
}

export async function deleteScimGroup(scope: ScimScope, id: string): Promise<void> {
  await requireGroupRow(scope.app.db, scope.caller, id);
  await deleteGroup(scope.app, scope.caller, id);
}
