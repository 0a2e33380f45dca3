// SCIM Users (RFC 7644 §3.3–§3.6) of the token's tenant: the users of purpose `user` of that tenant
// only (never its sub-tenants', never service accounts). Writes go through the user service's own
// steps (login namespace, events, audit) in one transaction; deactivation (`active: false`) ends
// the user's sessions and refresh tokens at once (revokeUserAccess), as disabling does elsewhere.
import { and, asc, desc, eq, inArray, sql, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { emails, groups, scimUsers, userGroups, users } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { normalizeLogin } from "../../domain/strings.ts";
import { changesOf, recordAudit } from "../audit/record.ts";
import { revokeUserAccess } from "../auth/refresh-tokens.ts";
import { checkLoginsFree, deleteUser, insertUser, publishUserEvent, userAudit } from "../identity/users.ts";
import { lockLogins } from "../identity/login-names.ts";
import { requireVisibleUser, type UserRow } from "../identity/visibility.ts";
import { scimNotFound } from "./errors.ts";
import { requireMatch, stampVersion } from "./etag.ts";
import { matches } from "./filter-match.ts";
import { filterSql } from "./filter-sql.ts";
import { listResponse, sortResources, type ScimQuery } from "./list.ts";
import { keyOf } from "./filter-match.ts";
import { applyPatch, type PatchOp, patchOpsOf } from "./patch.ts";
import { syncPassword } from "./password.ts";
import { project } from "./projection.ts";
import { preferredLocaleOf, userResource, userStateOf, type StoredUser, type UserState } from "./user-mapping.ts";

type Json = Record<string, unknown>;

/** Where the resources' `meta.location` points: the service provider's base URL (…/0.1/scim/v2). */
export interface ScimScope {
  app: AppContext;
  caller: Caller;
  base: string;
}

const u = alias(users, "u");

/** The SCIM-visible users condition: the caller's tenant, purpose `user`. */
function visible(caller: Caller): SQL {
  return and(eq(u.tenantUuid, caller.tenantUuid ?? ""), eq(u.purpose, "user"))!;
}

async function requireUserRow(db: DbOrTx, caller: Caller, id: string, lock = false): Promise<UserRow> {
  const read = db
    .select()
    .from(u)
    .where(and(visible(caller), eq(u.uuid, id)));
  const [row] = await (lock ? read.for("update") : read);
  if (!row) throw scimNotFound("User", id);
  return row as UserRow;
}

/** Emails, kept attributes and groups of several users, in three queries. */
async function storedUsers(db: DbOrTx, rows: UserRow[]): Promise<StoredUser[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.uuid);
  const [mails, kept, member] = await Promise.all([
    db
      .select({ userUuid: emails.userUuid, address: emails.address, main: emails.main })
      .from(emails)
      .where(inArray(emails.userUuid, ids))
      .orderBy(desc(emails.main), asc(emails.address)),
    db.select().from(scimUsers).where(inArray(scimUsers.userUuid, ids)),
    db
      .select({ userUuid: userGroups.userUuid, uuid: groups.uuid, name: groups.name })
      .from(userGroups)
      .innerJoin(groups, eq(groups.uuid, userGroups.groupUuid))
      .where(and(inArray(userGroups.userUuid, ids), eq(groups.systemManaged, false)))
      .orderBy(asc(groups.name)),
  ]);
  return rows.map((r) => {
    const s = kept.find((k) => k.userUuid === r.uuid);
    return {
      uuid: r.uuid,
      username: r.username,
      firstname: r.firstname,
      lastname: r.lastname,
      enabled: r.enabled,
      emails: mails.filter((m) => m.userUuid === r.uuid),
      externalId: s?.externalId ?? null,
      locale: r.locale ?? null,
      attributes: (s?.attributes as Json | undefined) ?? {},
      groups: member.filter((m) => m.userUuid === r.uuid),
      created: s?.createdAt ?? null,
      lastModified: s?.updatedAt ?? null,
    };
  });
}

const versionOf = (r: Json) => (r.meta as { version: string }).version;

function resourceOf(s: StoredUser, base: string): Json {
  const r = userResource(s, base);
  stampVersion(r);
  return r;
}

async function readResource(db: DbOrTx, row: UserRow, base: string): Promise<Json> {
  return resourceOf((await storedUsers(db, [row]))[0]!, base);
}

export async function getScimUser(scope: ScimScope, id: string, q?: ScimQuery): Promise<Json> {
  const row = await requireUserRow(scope.app.db, scope.caller, id);
  const r = await readResource(scope.app.db, row, scope.base);
  return q ? project(r, q.attributes, q.excluded) : r;
}

/** SQL sort columns; other `sortBy` paths sort in memory. */
function sortColumn(q: ScimQuery) {
  if (!q.sortBy) return u.uuid;
  const p = q.sortBy;
  if (p.schema && !/:core:2\.0:User$/i.test(p.schema)) return null;
  const key = `${p.attr}${p.sub ? `.${p.sub}` : ""}`.toLowerCase();
  return ({ id: u.uuid, username: u.username, "name.givenname": u.firstname, "name.familyname": u.lastname } as const)[
    key as "id"
  ];
}

/**
 * GET /Users: filtered in the database where the filter's attributes have columns (an index lookup
 * for `userName eq`), paged with LIMIT/OFFSET along the primary key (a deep startIndex walks the
 * index, never sorts the tenant); otherwise the candidates are read and filtered, sorted and paged
 * in memory.
 */
export async function listScimUsers(scope: ScimScope, q: ScimQuery): Promise<Json> {
  const { app, caller, base } = scope;
  const compiled = q.filter ? filterSql(q.filter, "User") : null;
  const where = compiled ? and(visible(caller), compiled.sql)! : visible(caller);
  const column = sortColumn(q);
  const inSql = (!q.filter || compiled?.exact) && column !== null && column !== undefined;
  if (inSql) {
    // The page's ids first (an index walk, however deep startIndex is), then those rows only.
    const ids =
      q.count === 0
        ? []
        : (
            await app.db
              .select({ uuid: u.uuid })
              .from(u)
              .where(where)
              .orderBy(q.descending ? desc(column) : asc(column), asc(u.uuid))
              .limit(q.count)
              .offset(q.startIndex - 1)
          ).map((r) => r.uuid);
    // A first page that is not full holds every match (the existence check's case: no count query).
    const total =
      q.startIndex === 1 && ids.length < q.count
        ? ids.length
        : ((await app.db.select({ total: sql<number>`count(*)::int` }).from(u).where(where)) as [{ total: number }])[0]
            .total;
    const order = new Map(ids.map((id, i) => [id, i]));
    const rows = ids.length
      ? (await app.db.select().from(u).where(inArray(u.uuid, ids))).sort(
          (a, b) => order.get(a.uuid)! - order.get(b.uuid)!,
        )
      : [];
    const resources = (await storedUsers(app.db, rows as UserRow[])).map((s) =>
      project(resourceOf(s, base), q.attributes, q.excluded),
    );
    return listResponse(resources, total, q.startIndex);
  }
  const rows = (await app.db.select().from(u).where(where).orderBy(asc(u.uuid))) as UserRow[];
  let all = (await storedUsers(app.db, rows)).map((s) => resourceOf(s, base));
  if (q.filter) all = all.filter((r) => matches(q.filter!, r, "User"));
  all = sortResources(all, q, "User");
  const page = all.slice(q.startIndex - 1, q.startIndex - 1 + q.count);
  return listResponse(
    page.map((r) => project(r, q.attributes, q.excluded)),
    all.length,
    q.startIndex,
  );
}

const sameLogin = (a: string | null, b: string) => a !== null && normalizeLogin(a).toLowerCase() === b.toLowerCase();

/**
 * Replaces the user's emails with `wanted` (first = main, all confirmed: the directory is the
 * authority); returns the addresses before and after, as the audit entry shows them.
 */
async function writeEmails(
  tx: DbOrTx,
  userUuid: string,
  wanted: string[],
  alsoCheck: Array<{ login: string; field: string }> = [],
) {
  const current = await tx.select().from(emails).where(eq(emails.userUuid, userUuid));
  const shown = (list: Array<{ address: string; main: boolean; confirmed: boolean }>) =>
    list.map((e) => ({ address: e.address, main: e.main, confirmed: e.confirmed }));
  const before = shown([...current].sort((a, b) => Number(b.main) - Number(a.main)));
  const after = shown(wanted.map((address, i) => ({ address, main: i === 0, confirmed: true })));
  const key = (a: string) => a.toLowerCase();
  const gone = current.filter((c) => !wanted.some((w) => key(w) === key(c.address)));
  if (gone.length)
    await tx.delete(emails).where(
      inArray(
        emails.uuid,
        gone.map((g) => g.uuid),
      ),
    );
  // Every new login of the write checked (and locked) at once: see lockLogins.
  const added = wanted.filter((w) => !current.some((c) => key(c.address) === key(w)));
  await checkLoginsFree(tx, [...alsoCheck, ...added.map((login) => ({ login, field: "emails" }))], userUuid);
  for (const [i, address] of wanted.entries()) {
    const have = current.find((c) => key(c.address) === key(address));
    if (have) {
      if (have.main !== (i === 0) || !have.confirmed || have.address !== address)
        await tx
          .update(emails)
          .set({ main: i === 0, confirmed: true, address })
          .where(eq(emails.uuid, have.uuid));
      continue;
    }
    await tx.insert(emails).values({ address, main: i === 0, confirmed: true, userUuid });
  }
  return { before, after };
}

async function keep(
  tx: DbOrTx,
  user: Pick<UserRow, "uuid" | "tenantUuid">,
  state: UserState,
): Promise<typeof scimUsers.$inferSelect> {
  const [row] = await tx
    .insert(scimUsers)
    .values({
      userUuid: user.uuid,
      tenantUuid: user.tenantUuid,
      externalId: state.externalId,
      attributes: state.attributes,
    })
    .onConflictDoUpdate({
      target: scimUsers.userUuid,
      set: { externalId: state.externalId, attributes: state.attributes, updatedAt: sql`now()` },
    })
    .returning();
  return row!;
}

export async function createScimUser(scope: ScimScope, body: unknown): Promise<Json> {
  const { app, caller } = scope;
  const state = userStateOf(body);
  const stored = await inTransaction(app, async (tx): Promise<StoredUser> => {
    // Every login of the user locked at once (insertUser's own check then re-takes held locks).
    if (state.emails.length > 1) await lockLogins(tx, [state.username, ...state.emails]);
    // The main address goes through insertUser; the others after it, each checked as a login.
    const row = await insertUser(
      app,
      tx,
      caller.tenantUuid!,
      {
        username: state.username,
        firstname: state.firstname,
        lastname: state.lastname,
        enabled: state.enabled,
        password: state.password,
        email_address: state.emails[0] ?? null,
        locale: state.locale,
      },
      true,
    );
    if (state.emails.length > 1) await writeEmails(tx, row.uuid, state.emails);
    const kept = await keep(tx, row, state);
    await recordAudit(app, tx, caller, userAudit("user.create", row, null, row));
    // The answer is what this transaction wrote: a new user is in no group a directory sees (only
    // the tenant's system-managed one), and its addresses are the ones sent, the first the main.
    return {
      uuid: row.uuid,
      username: row.username,
      firstname: row.firstname,
      lastname: row.lastname,
      enabled: row.enabled,
      emails: state.emails.map((address, i) => ({ address, main: i === 0 })),
      externalId: kept.externalId,
      locale: row.locale ?? null,
      attributes: (kept.attributes as Json | null) ?? {},
      groups: [],
      created: kept.createdAt,
      lastModified: kept.updatedAt,
    };
  });
  return resourceOf(stored, scope.base);
}

/** Writes `state` over the locked `before` (PUT, and PATCH once applied). */
async function writeState(scope: ScimScope, tx: DbOrTx, before: UserRow, state: UserState): Promise<UserRow> {
  const { app, caller } = scope;
  const renamed = !sameLogin(before.username, state.username);
  const [row] = await tx
    .update(users)
    .set({
      username: state.username,
      firstname: state.firstname,
      lastname: state.lastname,
      enabled: state.enabled,
      locale: state.locale,
    })
    .where(eq(users.uuid, before.uuid))
    .returning();
  // Deactivation: every session and refresh token of the user ends in this transaction (evented).
  if (before.enabled && !state.enabled) await revokeUserAccess(app, tx, row!);
  const mails = await writeEmails(
    tx,
    before.uuid,
    state.emails,
    renamed ? [{ login: state.username, field: "userName" }] : [],
  );
  const mailChanges = changesOf({ emails: mails.before }, { emails: mails.after });
  if (mailChanges.length)
    await recordAudit(app, tx, caller, {
      action: "user.emails.update",
      target: { kind: "user", uuid: before.uuid, tenantUuid: before.tenantUuid },
      changes: mailChanges,
    });
  if (state.password !== null)
    await syncPassword(app, tx, caller, row!, state.password, [state.username, ...state.emails]);
  await keep(tx, row!, state);
  await publishUserEvent(app, tx, "updated", row!);
  await recordAudit(app, tx, caller, userAudit("user.update", row!, before, row!));
  return row!;
}

/** What a change may not alter (`/Me`: a user's own protected attributes); throws to refuse it. */
export type StateGuard = (before: UserState, after: UserState) => void;

export async function replaceScimUser(
  scope: ScimScope,
  id: string,
  body: unknown,
  ifMatch?: string,
  guard?: StateGuard,
): Promise<Json> {
  const state = userStateOf(body);
  return inTransaction(scope.app, async (tx) => {
    const before = await requireUserRow(tx, scope.caller, id, true);
    const current = await readResource(tx, before, scope.base);
    requireMatch(ifMatch, versionOf(current));
    guard?.(userStateOf(current), state);
    const row = await writeState(scope, tx, before, state);
    return readResource(tx, row, scope.base);
  });
}

export async function patchScimUser(
  scope: ScimScope,
  id: string,
  body: unknown,
  ifMatch?: string,
  guard?: StateGuard,
): Promise<Json> {
  const ops = patchOpsOf(body);
  return inTransaction(scope.app, async (tx) => {
    const before = await requireUserRow(tx, scope.caller, id, true);
    const current = await readResource(tx, before, scope.base);
    requireMatch(ifMatch, versionOf(current));
    const patched = applyPatch(current, ops, "User");
    // A `locale` that only mirrors `preferredLanguage` (Entra sends no `locale`) follows it when a
    // PATCH changes `preferredLanguage` alone.
    if (touches(ops, "preferredLanguage") && !touches(ops, "locale")) {
      const was = preferredLocaleOf(current[keyOf(current, "preferredLanguage") ?? "preferredLanguage"]);
      if (was !== null && current.locale === was) delete patched[keyOf(patched, "locale") ?? "locale"];
    }
    const state = userStateOf(patched);
    guard?.(userStateOf(current), state);
    const row = await writeState(scope, tx, before, state);
    return readResource(tx, row, scope.base);
  });
}

/** Whether an operation names `attr` of the core User schema (by path, or as a key of a no-path value). */
function touches(ops: PatchOp[], attr: string): boolean {
  const re = new RegExp(`^(urn:ietf:params:scim:schemas:core:2\\.0:User:)?${attr}$`, "i");
  return ops.some((op) =>
    op.path !== null
      ? re.test(op.path.trim())
      : op.value !== null && typeof op.value === "object" && Object.keys(op.value).some((k) => re.test(k)),
  );
}

/** DELETE /Users/{id}: 404 when not a user of the token's tenant; else the user service's deletion. */
export async function deleteScimUser(scope: ScimScope, id: string, ifMatch?: string): Promise<void> {
  const row = await requireUserRow(scope.app.db, scope.caller, id);
  if (ifMatch) requireMatch(ifMatch, versionOf(await readResource(scope.app.db, row, scope.base)));
  await deleteUser(scope.app, scope.caller, id);
}

/** The SCIM-visible users among `ids` (group members must be users of the token's tenant). */
export async function visibleUserIds(db: DbOrTx, caller: Caller, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .select({ uuid: u.uuid })
    .from(u)
    .where(and(visible(caller), inArray(u.uuid, ids)));
  return new Set(rows.map((r) => r.uuid));
}

/** Whether a directory manages a user (GET /users/{u}/scim: the console warns before an edit). */
export async function directoryState(
  app: AppContext,
  caller: Caller,
  userUuid: string,
): Promise<{ managed: boolean; external_id: string | null; updated_at: string | null }> {
  const user = await requireVisibleUser(app, caller, userUuid);
  const [row] = await app.db.select().from(scimUsers).where(eq(scimUsers.userUuid, user.uuid));
  return {
    managed: Boolean(row),
    external_id: row?.externalId ?? null,
    updated_at: row?.updatedAt.toISOString() ?? null,
  };
}
