// Users (wazo-auth's user API, user rules): one login namespace shared by usernames and email addresses,
// case-insensitive; passwords hashed as wazo-auth does; disabling or deleting ends the sessions.
import { and, asc, desc, eq, ilike, inArray, ne, or, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { execRows, type DbOrTx } from "../../db/index.ts";
import { emails, groups, refreshTokens, tenantUserCounts, userGroups, users } from "../../db/schema.ts";
import { listPage } from "../../db/paging.ts";
import { changesOf, recordAudit, secretChange, type AuditActor, type AuditEntry } from "../audit/record.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { collection, searchPattern, type Collection, type ListParams } from "../../domain/collection.ts";
import { ApiError, AuthenticationFailed, Conflict, invalidField, NotFound, orAbsent } from "../../domain/errors.ts";
import { normalizeLogin } from "../../domain/strings.ts";
import { publishEvent, routingKey } from "../events.ts";
import { listCache } from "../list-cache.ts";
import { lockLogins, storedLoginKey, typedLoginKey } from "./login-names.ts";
import { requireMayExempt } from "../auth/mfa-policy.ts";
import { authenticationMethods, effectiveMethod } from "../auth/identity-providers.ts";
import { hashPassword, verifyPassword } from "../auth/passwords.ts";
import { enforcePasswordPolicy } from "../auth/password-policy.ts";
import { revokeUserAccess } from "../auth/refresh-tokens.ts";
import { revokeUserSessions } from "../auth/sessions.ts";
import { noticeFamiliesEnding } from "../oidc/backchannel.ts";
import { endUserBrowserSessions } from "../oidc/browser-session.ts";
import { requireVisibleUser, inCallerScope, type UserRow } from "./visibility.ts";

export interface UserInput {
  uuid?: string;
  username?: string | null;
  firstname?: string | null;
  lastname?: string | null;
  purpose?: "user" | "internal" | "external_api";
  authentication_method?: string;
  enabled?: boolean;
  password?: string | null;
  email_address?: string | null;
  /** Tessera addition (issue 43): the user's language, a BCP 47 tag; absent on an update = unchanged. */
  locale?: string | null;
}

export interface EmailJson {
  uuid: string;
  address: string;
  main: boolean;
  confirmed: boolean;
}

export interface UserJson {
  uuid: string;
  username: string | null;
  firstname: string | null;
  lastname: string | null;
  purpose: string;
  authentication_method: string;
  enabled: boolean;
  tenant_uuid: string;
  emails: EmailJson[];
  /** Tessera addition (issue 43): the language of the user's pages and mails; null = none chosen. */
  locale: string | null;
}

/** User JSON (A.8) for several rows: one query for all their emails. */
export async function usersJson(db: DbOrTx, rows: UserRow[]): Promise<UserJson[]> {
  if (rows.length === 0) return [];
  const mails = await db
    .select()
    .from(emails)
    .where(
      inArray(
        emails.userUuid,
        rows.map((r) => r.uuid),
      ),
    )
    .orderBy(desc(emails.main), asc(emails.address));
  return rows.map((u) =>
    userJsonOf(
      u,
      mails
        .filter((m) => m.userUuid === u.uuid)
        .map((m) => ({ uuid: m.uuid, address: m.address, main: m.main, confirmed: m.confirmed })),
    ),
  );
}

function userJsonOf(u: UserRow, mails: EmailJson[]): UserJson {
  return {
    uuid: u.uuid,
    username: u.username,
    firstname: u.firstname,
    lastname: u.lastname,
    purpose: u.purpose,
    authentication_method: u.authenticationMethod,
    enabled: u.enabled,
    tenant_uuid: u.tenantUuid,
    emails: mails,
    locale: u.locale ?? null,
  };
}

/**
 * The emails of each listed user as JSON text, computed in the page's own query. The outer column
 * is spelled out: drizzle leaves select-list columns unqualified, and a bare "uuid" inside this
 * subquery would be the email's own uuid (no email ever matched, and every row scanned them all).
 */
const emailsField = sql<string>`(select coalesce(json_agg(json_build_object('uuid', e.uuid, 'address', e.address, 'main', e.main, 'confirmed', e.confirmed) order by e.main desc, e.address), '[]')::text from auth_email e where e.user_uuid = "auth_user"."uuid")`;

export async function userJson(db: DbOrTx, row: UserRow): Promise<UserJson> {
  return (await usersJson(db, [row]))[0]!;
}

export type UserFilter =
  | "uuid"
  | "username"
  | "firstname"
  | "lastname"
  | "purpose"
  | "email_address"
  | "group_uuid"
  | "policy_uuid"
  | "policy_slug"
  | "has_policy_uuid"
  | "has_policy_slug";

const SORT = { username: users.username, firstname: users.firstname, lastname: users.lastname } as const;

/** Search and strict filters of §7.2 as SQL conditions (shared by /users and /groups/{g}/users). */
export function userConditions(params: ListParams<UserFilter>): SQL[] {
  const c: SQL[] = [];
  const pattern = searchPattern(params.search);
  if (pattern) {
    // `uuid = any(array(subquery))` rather than `exists`: every branch of the OR is then an index
    // condition (trigram indexes, the primary key), so PostgreSQL combines them in a bitmap.
    c.push(
      or(
        ilike(users.username, pattern),
        ilike(users.firstname, pattern),
        ilike(users.lastname, pattern),
        sql`${users.uuid} = any(array(select e.user_uuid from auth_email e where e.address ilike ${pattern}))`,
      )!,
    );
  }
  const f = params.filters;
  if (f.uuid !== undefined) c.push(eq(users.uuid, f.uuid));
  if (f.username !== undefined) c.push(eq(users.username, f.username));
  if (f.firstname !== undefined) c.push(eq(users.firstname, f.firstname));
  if (f.lastname !== undefined) c.push(eq(users.lastname, f.lastname));
  if (f.purpose !== undefined) c.push(eq(users.purpose, f.purpose));
  if (f.email_address !== undefined)
    c.push(
      sql`exists (select 1 from auth_email e where e.user_uuid = ${users.uuid} and e.address = ${f.email_address})`,
    );
  if (f.group_uuid !== undefined)
    c.push(
      sql`exists (select 1 from auth_user_group ug where ug.user_uuid = ${users.uuid} and ug.group_uuid = ${f.group_uuid})`,
    );
  const direct = (cond: SQL) =>
    sql`exists (select 1 from auth_user_policy up join auth_policy p on p.uuid = up.policy_uuid where up.user_uuid = ${users.uuid} and ${cond})`;
  const viaGroup = (cond: SQL) =>
    sql`exists (select 1 from auth_user_group ug join auth_group_policy gp on gp.group_uuid = ug.group_uuid join auth_policy p on p.uuid = gp.policy_uuid where ug.user_uuid = ${users.uuid} and ${cond})`;
  if (f.policy_uuid !== undefined) c.push(direct(sql`p.uuid = ${f.policy_uuid}`));
  if (f.policy_slug !== undefined) c.push(direct(sql`p.slug = ${f.policy_slug}`));
  if (f.has_policy_uuid !== undefined)
    c.push(or(direct(sql`p.uuid = ${f.has_policy_uuid}`), viaGroup(sql`p.uuid = ${f.has_policy_uuid}`))!);
  if (f.has_policy_slug !== undefined)
    c.push(or(direct(sql`p.slug = ${f.has_policy_slug}`), viaGroup(sql`p.slug = ${f.has_policy_slug}`))!);
  return c;
}

/**
 * A page of users under `base`, in one query: rows, emails and counts. `total` is `totalOf` when
 * the caller has a cheaper expression for it (the per-tenant counters), else a count of `base`.
 */
export async function listUsersWhere(
  app: AppContext,
  base: SQL,
  params: ListParams<UserFilter>,
  totalOf?: SQL<number>,
): Promise<Collection<UserJson>> {
  const conditions = userConditions(params);
  const where = conditions.length ? and(base, ...conditions) : base;
  const column = SORT[(params.order ?? "username") as keyof typeof SORT] ?? users.username;
  const order = [
    params.direction === "desc" ? desc(column) : asc(column),
    params.direction === "desc" ? desc(users.uuid) : asc(users.uuid),
  ];
  const page = await listPage(app.db, users, base, where, order, params, {
    total: totalOf,
    fields: { emails: emailsField },
  });
  return collection(
    page.rows.map((r) => userJsonOf(r, JSON.parse(r.emails) as EmailJson[])),
    page.filtered,
    page.total,
  );
}

export async function listUsers(
  app: AppContext,
  caller: Caller,
  params: ListParams<UserFilter>,
): Promise<Collection<UserJson>> {
  // One counter row either way: the tenant's own users, or its whole subtree's (migration scale:
  // tessera.tenant_subtree_users, kept by triggers), never a sum over every tenant of the subtree.
  const scope = caller.tenantUuid ?? "";
  const total = params.recurse
    ? sql<number>`(select coalesce((select s.users from tessera.tenant_subtree_users s where s.tenant_uuid = ${scope}), 0))`
    : sql<number>`(select coalesce((select ${tenantUserCounts.users} from ${tenantUserCounts} where ${tenantUserCounts.tenantUuid} = ${scope}), 0))`;
  return listUsersWhere(app, inCallerScope(app, caller, params.recurse, users.tenantUuid), params, total);
}

/**
 * GET /users as JSON text, from the list cache when nothing it reads changed since (see
 * list-cache.ts). The key is the caller's scoping tenant and every list parameter: `recurse` widens
 * the scope through the tenant tree, whose changes also raise the list version.
 */
export function listUsersJson(app: AppContext, caller: Caller, params: ListParams<UserFilter>): Promise<string> {
  const key = JSON.stringify(["users", caller.tenantUuid, params]);
  return listCache(app).answer(key, () => listUsers(app, caller, params));
}

export async function getUser(app: AppContext, caller: Caller, uuid: string): Promise<UserJson> {
  return userJson(app.db, await requireVisibleUser(app, caller, uuid));
}

const defaultMethod = (purpose: string) => (purpose === "user" ? "default" : "native");

function checkMethod(app: AppContext, method: string): string {
  const choices = authenticationMethods(app);
  if (!choices.includes(method))
    throw invalidField(
      "users",
      "authentication_method",
      "enum",
      { choices },
      `Invalid authentication method ${method}`,
    );
  return method;
}

/**
 * 409 when `login` is already a username or an email address of another user, compared as PRECIS
 * UsernameCaseMapped does (login-names.ts: `ＡＤＭＩＮ` is `admin`). Call it in the writing transaction.
 */
export async function checkLoginFree(db: DbOrTx, rawLogin: string, field: string, exceptUser?: string): Promise<void> {
  await checkLoginsFree(db, [{ login: rawLogin, field }], exceptUser);
}

/**
 * `checkLoginFree` for several logins at once: their keys locked together (login-names.ts), then
 * one query; the 409 names the field of the first login taken.
 */
export async function checkLoginsFree(
  db: DbOrTx,
  wanted: Array<{ login: string; field: string }>,
  exceptUser?: string,
): Promise<void> {
  const logins = wanted.map((w) => ({ ...w, login: normalizeLogin(w.login) }));
  if (logins.length === 0) return;
  await lockLogins(
    db,
    logins.map((l) => l.login),
  );
  const keys = sql.join(
    logins.map((l) => typedLoginKey(l.login)),
    sql`, `,
  );
  // Addresses are ASCII in practice: the lower(address) index serves them, with the typed login's key.
  const taken = await execRows<{ key: string }>(
    db,
    sql`select ${storedLoginKey(users.username)} as key from ${users}
          where ${storedLoginKey(users.username)} in (${keys}) ${exceptUser ? sql`and ${users.uuid} <> ${exceptUser}` : sql``}
        union all
        select lower(${emails.address}) from ${emails}
          where lower(${emails.address}) in (${keys}) ${exceptUser ? sql`and ${emails.userUuid} <> ${exceptUser}` : sql``}
        limit 1`,
  );
  if (taken.length === 0) return;
  const key = taken[0]!.key;
  const hit = logins.find((l) => l.login.normalize("NFKC").toLowerCase() === key) ?? logins[0]!;
  throw new Conflict("users", {
    [hit.field]: {
      constraint_id: "unique",
      constraint: hit.field,
      message: `The login "${hit.login}" is already used`,
    },
  });
}

/** Creates a user in `tenantUuid` (caller's transaction); also used by registration (`emailConfirmed: false`). */
export async function createUser(
  app: AppContext,
  tx: DbOrTx,
  tenantUuid: string,
  input: UserInput,
  emailConfirmed = true,
): Promise<UserJson> {
  return userJson(tx, await insertUser(app, tx, tenantUuid, input, emailConfirmed));
}

/** `createUser` returning the stored row (SCIM builds its own answer: no read-back of the emails). */
export async function insertUser(
  app: AppContext,
  tx: DbOrTx,
  tenantUuid: string,
  input: UserInput,
  emailConfirmed = true,
): Promise<UserRow> {
  const purpose = input.purpose ?? "user";
  const method = checkMethod(app, input.authentication_method ?? defaultMethod(purpose));
  if (input.password)
    await enforcePasswordPolicy(app, tx, {
      tenantUuid,
      password: input.password,
      logins: [input.username, input.email_address],
      field: "password",
    });
  if (input.uuid) {
    const [dup] = await tx.select({ uuid: users.uuid }).from(users).where(eq(users.uuid, input.uuid));
    if (dup)
      throw new Conflict("users", {
        uuid: { constraint_id: "unique", constraint: "uuid", message: `The uuid "${input.uuid}" is already used` },
      });
  }
  // Derived before the login checks: they lock the login namespace until the commit.
  const hash = input.password ? await hashPassword(input.password, app.config) : null;
  await checkLoginsFree(tx, [
    ...(input.username ? [{ login: input.username, field: "username" }] : []),
    ...(input.email_address ? [{ login: input.email_address, field: "email_address" }] : []),
  ]);
  const [row] = await tx
    .insert(users)
    .values({
      ...(input.uuid ? { uuid: input.uuid } : {}),
      username: input.username ?? null,
      firstname: input.firstname ?? null,
      lastname: input.lastname ?? null,
      purpose,
      authenticationMethod: method,
      enabled: input.enabled ?? true,
      tenantUuid,
      passwordHash: hash?.hash ?? null,
      passwordSalt: hash?.salt ?? null,
      passwordIterations: hash?.iterations ?? null,
      locale: input.locale ?? null,
    })
    .returning();
  const user = row!;
  if (input.email_address)
    await tx
      .insert(emails)
      .values({ address: input.email_address, main: true, confirmed: emailConfirmed, userUuid: user.uuid });
  // Into the tenant's system-managed group of all its users, when it has one: one statement.
  await execRows(
    tx,
    sql`insert into ${userGroups} (group_uuid, user_uuid)
          select ${groups.uuid}, ${user.uuid} from ${groups}
           where ${groups.tenantUuid} = ${tenantUuid} and ${groups.systemManaged}
        on conflict do nothing`,
  );
  await publishUserEvent(app, tx, "created", user);
  return user as UserRow;
}

export async function createUserAsCaller(app: AppContext, caller: Caller, input: UserInput): Promise<UserJson> {
  if (!caller.tenantUuid) throw new NotFound("tenants");
  await requireMayExempt(app, caller, caller.tenantUuid, input.purpose ?? "user", null);
  return inTransaction(app, async (tx) => {
    const user = await createUser(app, tx, caller.tenantUuid!, input);
    await recordAudit(app, tx, caller, userAudit("user.create", user, null, user));
    return user;
  });
}

/** The fields of a user an entry compares (never its password: `changePassword` records it by name only). */
const AUDITED_USER_FIELDS = [
  "username",
  "firstname",
  "lastname",
  "purpose",
  "authentication_method",
  "enabled",
  "locale",
];

const userFields = (u: UserRow | UserJson) =>
  "tenantUuid" in u
    ? {
        username: u.username,
        firstname: u.firstname,
        lastname: u.lastname,
        purpose: u.purpose,
        authentication_method: u.authenticationMethod,
        enabled: u.enabled,
        locale: u.locale ?? null,
      }
    : (u as unknown as Record<string, unknown>);

/** An entry about a user: its fields before and after (either absent for a creation or a deletion). */
export function userAudit(
  action: string,
  user: { uuid: string; tenant_uuid?: string; tenantUuid?: string },
  before: UserRow | UserJson | null,
  after: UserRow | UserJson | null,
): AuditEntry {
  return {
    action,
    target: { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid ?? user.tenant_uuid ?? null },
    changes: changesOf(before && userFields(before), after && userFields(after), AUDITED_USER_FIELDS),
  };
}

export async function publishUserEvent(
  app: AppContext,
  tx: DbOrTx,
  kind: "created" | "updated" | "deleted",
  user: UserRow,
): Promise<void> {
  await publishEvent(app, tx, {
    name: `auth_user_${kind}`,
    routingKey: routingKey(`auth.users.{user_uuid}.${kind}`, { user_uuid: user.uuid }),
    data: { uuid: user.uuid, tenant_uuid: user.tenantUuid, username: user.username },
    tenantUuid: user.tenantUuid,
    userUuid: user.uuid,
    aggregate: `user:${user.uuid}`,
  });
}

/** Full replacement of the editable fields; disabling ends the user's sessions and refresh tokens. */
export async function updateUser(app: AppContext, caller: Caller, uuid: string, input: UserInput): Promise<void> {
  const purpose = input.purpose ?? "user";
  const method = checkMethod(app, input.authentication_method ?? defaultMethod(purpose));
  await inTransaction(app, async (tx) => {
    // Locked: read without it, a concurrent update committed before ours made the audit entry's
    // `old` values (and the event's) those of two changes ago.
    const before = await requireVisibleUser(app, caller, uuid, tx, true);
    await requireMayExempt(app, caller, before.tenantUuid, purpose, before.purpose, tx);
    if (input.username) await checkLoginFree(tx, input.username, "username", uuid);
    const enabled = input.enabled ?? true;
    const replaced = {
      username: input.username ?? null,
      firstname: input.firstname ?? null,
      lastname: input.lastname ?? null,
      purpose,
      authenticationMethod: method,
      enabled,
      // Tessera's own field: a wazo-auth client's full replacement, which does not know it, keeps it.
      ...(input.locale !== undefined ? { locale: input.locale } : {}),
    };
    const [row] = await tx.update(users).set(replaced).where(eq(users.uuid, uuid)).returning();
    if (!enabled) await revokeUserAccess(app, tx, row!);
    // One round trip for both: the UPDATE holds the user's row until commit, and its other writers
    // wait (issue 26: with the entry as a statement of its own, −22 % → −6 % on the bench's row).
    await Promise.all([
      publishUserEvent(app, tx, "updated", row!),
      recordAudit(app, tx, caller, userAudit("user.update", row!, before, row!)),
    ]);
  });
}

/** Deletes a visible user, ending its sessions and tokens first (D11 of docs/wazo-auth-differences.md); absent → nothing (D4). */
export async function deleteUser(app: AppContext, caller: Caller, uuid: string): Promise<void> {
  await inTransaction(app, async (tx) => {
    const user = await orAbsent(requireVisibleUser(app, caller, uuid, tx, true)); // the row deleted, as it is
    if (!user) return; // absent or not visible: the desired state (D4 of docs/wazo-auth-differences.md)
    await revokeUserSessions(app, tx, uuid);
    // What the deletion cascades to, its clients told first (back-channel logout): its browser
    // sessions and its refresh token families.
    await endUserBrowserSessions(app, tx, uuid);
    await noticeFamiliesEnding(app, tx, eq(refreshTokens.userUuid, uuid));
    await tx.delete(users).where(eq(users.uuid, uuid));
    await publishUserEvent(app, tx, "deleted", user);
    await recordAudit(app, tx, caller, userAudit("user.delete", user, user, null));
  });
}

/** PUT /users/{u}/password: the old password must match; every session of the user ends. */
export async function changePassword(
  app: AppContext,
  caller: Caller,
  uuid: string,
  oldPassword: string,
  newPassword: string,
): Promise<void> {
  const user = caller.userUuid === uuid ? await ownUser(app, uuid) : await requireVisibleUser(app, caller, uuid);
  // Before the old password: a directory (ldap) or SAML user has none here to compare (§6.4).
  await requireNativePassword(app, user);
  const ok = await verifyPassword(
    oldPassword,
    { hash: user.passwordHash, salt: user.passwordSalt, iterations: user.passwordIterations },
    app.config,
  );
  if (!ok) throw new AuthenticationFailed();
  // After the old password: only its holder learns which rule a new one breaks.
  await setPassword(app, user, newPassword, caller, "user.password.change", { field: "new_password" });
}

/** 405 when the user's effective method is not native: its password lives in its identity provider. */
async function requireNativePassword(app: AppContext, user: UserRow): Promise<void> {
  if ((await effectiveMethod(app.db, user.authenticationMethod, user.tenantUuid)) !== "native") {
    throw new ApiError(
      405,
      "password-managed-externally",
      "The password of this user is managed by its identity provider",
      "users",
      { uuid: user.uuid },
    );
  }
}

async function ownUser(app: AppContext, uuid: string): Promise<UserRow> {
  const [user] = await app.db.select().from(users).where(eq(users.uuid, uuid));
  if (!user) throw new NotFound("users", uuid);
  return user;
}

/**
 * Sets (or, with null, removes) a native password — one the tenant's password policy accepts, else a
 * 400 on `field` — and ends the user's sessions and refresh tokens
 * (`revokeUserAccess`) — the caller's own session too when users change their own password, as in
 * wazo-auth: the client logs in again with the new password.
 */
export async function setPassword(
  app: AppContext,
  user: UserRow,
  password: string | null,
  actor: AuditActor | Caller | null,
  action: string,
  /**
   * An administrator's "must change at next login" (docs/security.md; any other new password clears
   * it), and the body field a refused password is reported under.
   */
  opts: { mustChange?: boolean; field?: string } = {},
): Promise<void> {
  const mustChange = Boolean(opts.mustChange) && password !== null;
  await requireNativePassword(app, user);
  if (password !== null) {
    const mails = await app.db.select({ address: emails.address }).from(emails).where(eq(emails.userUuid, user.uuid));
    await enforcePasswordPolicy(app, app.db, {
      tenantUuid: user.tenantUuid,
      password,
      logins: [user.username, ...mails.map((m) => m.address)],
      field: opts.field ?? "password",
    });
  }
  const hash = password === null ? null : await hashPassword(password, app.config);
  await inTransaction(app, async (tx) => {
    await tx
      .update(users)
      .set({
        passwordHash: hash?.hash ?? null,
        passwordSalt: hash?.salt ?? null,
        passwordIterations: hash?.iterations ?? null,
        passwordChangeRequired: mustChange,
      })
      .where(eq(users.uuid, user.uuid));
    await revokeUserAccess(app, tx, user);
    await recordAudit(app, tx, actor, {
      action,
      target: { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid },
      changes: [
        secretChange("password"),
        ...(mustChange === user.passwordChangeRequired
          ? []
          : [{ field: "password_change_required", old: user.passwordChangeRequired, new: mustChange }]),
      ],
    });
    await publishEvent(app, tx, {
      name: "auth_user_password_changed",
      routingKey: routingKey("auth.users.{user_uuid}.password.updated", { user_uuid: user.uuid }),
      data: { uuid: user.uuid, tenant_uuid: user.tenantUuid },
      tenantUuid: user.tenantUuid,
      userUuid: user.uuid,
      aggregate: `user:${user.uuid}`,
    });
  });
}
