// What the wazo_user backend needs of users: login resolution (wazo-auth's login resolution), password
// check (§10.2), the token ACL from policies (§4.4) and the token metadata (§12.2).
import { and, eq, getTableColumns, sql } from "drizzle-orm";
import { unionAll } from "drizzle-orm/pg-core";
import type { AppContext } from "../../boot/context.ts";
import { execRows, type DbOrTx } from "../../db/index.ts";
import {
  accesses,
  emails,
  groupPolicies,
  groups,
  policies,
  policyAccesses,
  tenants,
  userGroups,
  userPolicies,
  users,
} from "../../db/schema.ts";
import type { LoginArgs } from "../../plugins/types.ts";
import { isStorableString, normalizeLogin } from "../../domain/strings.ts";
import { storedLoginKey, typedLoginKey } from "../identity/login-names.ts";
import { hashPassword, needsRehash, verifyPassword } from "./passwords.ts";
import { loginMfaColumns } from "./mfa-policy.ts";
import { appendedCode } from "./totp.ts";

export type UserRow = typeof users.$inferSelect;

/**
 * A user as read for a login, with its tenant's default authentication method (for `default`) and
 * its MFA state (a confirmed factor; any tenant MFA policy set), so MFA costs no statement of its own.
 */
export type LoginUserRow = UserRow & {
  tenantAuthenticationMethod: string;
  mfaEnabled: boolean;
  mfaPoliciesSet: boolean;
};

const loginColumns = {
  ...getTableColumns(users),
  tenantAuthenticationMethod: tenants.defaultAuthenticationMethod,
  ...loginMfaColumns,
};

/**
 * Enabled user by confirmed email, else by username; case-insensitive, after NFC normalisation
 * (usernames are stored NFC), else by the username's PRECIS key. A login the database could not
 * even compare (NUL, unpaired surrogate, absurd length) matches nobody. One round trip, which also reads the tenant's default
 * authentication method (the login's method check needs no query of its own).
 */
export async function findUserByLogin(db: DbOrTx, rawLogin: string): Promise<LoginUserRow | null> {
  if (!isStorableString(rawLogin, 1024)) return null;
  const login = normalizeLogin(rawLogin);
  // UNION ALL runs its branches in order and LIMIT 1 stops at the first row: the email wins.
  const byEmail = db
    .select(loginColumns)
    .from(emails)
    .innerJoin(users, eq(emails.userUuid, users.uuid))
    .innerJoin(tenants, eq(tenants.uuid, users.tenantUuid))
    .where(and(sql`lower(${emails.address}) = lower(${login})`, eq(emails.confirmed, true), eq(users.enabled, true)));
  const byName = db
    .select(loginColumns)
    .from(users)
    .innerJoin(tenants, eq(tenants.uuid, users.tenantUuid))
    .where(and(sql`lower(${users.username}) = lower(${login})`, eq(users.enabled, true)));
  // Then as PRECIS compares (login-names.ts): `ＡＤＭＩＮ` logs in as `admin`. The exact spelling
  // comes first, for rows that collided before the comparison was this strict.
  const byKey = db
    .select(loginColumns)
    .from(users)
    .innerJoin(tenants, eq(tenants.uuid, users.tenantUuid))
    .where(and(sql`${storedLoginKey(users.username)} = ${typedLoginKey(login)}`, eq(users.enabled, true)));
  const [user] = await unionAll(byEmail, byName, byKey).limit(1);
  return user ?? null;
}

const loginUsers = new WeakMap<LoginArgs, { login: string; user: LoginUserRow | null }>();

/**
 * `findUserByLogin` read once per login: the password check, the method check, the metadata and
 * the ACL of one `POST /0.1/token` all ask for the same user, so it is kept on the login's args.
 */
/** The user this login already read for `login`, if any: no query (the MFA step's source). */
export function knownLoginUser(args: LoginArgs, login: string): LoginUserRow | null {
  const known = loginUsers.get(args);
  return known && known.login === login ? known.user : null;
}

export async function findLoginUser(db: DbOrTx, login: string, args?: LoginArgs): Promise<LoginUserRow | null> {
  const known = args && loginUsers.get(args);
  if (known && known.login === login) return known.user;
  const user = await findUserByLogin(db, login);
  if (args) loginUsers.set(args, { login, user });
  return user;
}

export async function checkUserPassword(
  app: AppContext,
  login: string,
  password: string,
  args?: LoginArgs,
): Promise<boolean> {
  const user = await findLoginUser(app.db, login, args);
  const stored = user
    ? { hash: user.passwordHash, salt: user.passwordSalt, iterations: user.passwordIterations }
    : null;
  let ok = await verifyPassword(password, stored, app.config);
  // FreeIPA's way for Basic-only clients: password followed by the current code (mfa-login.ts).
  const split = !ok && user?.mfaEnabled && args ? appendedCode(password) : null;
  if (split && (await verifyPassword(split.password, stored, app.config))) {
    ok = true;
    password = split.password;
    args!.mfaAppendedCode = split.code;
  }
  if (ok && user && needsRehash(stored!, app.config)) await rehashPassword(app, user, password);
  return ok;
}

/**
 * Rewrites a matching hash in the configured format (wazo-auth's PBKDF2 → argon2id, new argon2
 * parameters, or back to PBKDF2 for a rollback). Only if the hash is still the one just verified;
 * a failure is logged and never fails the login.
 */
async function rehashPassword(app: AppContext, user: UserRow, password: string): Promise<void> {
  try {
    const fresh = await hashPassword(password, app.config);
    await app.db
      .update(users)
      .set({ passwordHash: fresh.hash, passwordSalt: fresh.salt, passwordIterations: fresh.iterations })
      .where(and(eq(users.uuid, user.uuid), eq(users.passwordHash, user.passwordHash!)));
  } catch (e) {
    app.log.warn("password rehash failed", { user_uuid: user.uuid, error: (e as Error).message });
  }
}

/** ACL of every policy of every group of the user, then of its own policies (duplicates kept). One round trip. */
export async function userAcl(db: DbOrTx, userUuid: string): Promise<string[]> {
  const rows = await execRows<{ access: string }>(
    db,
    sql`select ${accesses.access} as access, 0 as via from ${userGroups}
          join ${groupPolicies} on ${groupPolicies.groupUuid} = ${userGroups.groupUuid}
          join ${policyAccesses} on ${policyAccesses.policyUuid} = ${groupPolicies.policyUuid}
          join ${accesses} on ${accesses.id} = ${policyAccesses.accessId}
          where ${userGroups.userUuid} = ${userUuid}
        union all
        select ${accesses.access} as access, 1 as via from ${userPolicies}
          join ${policyAccesses} on ${policyAccesses.policyUuid} = ${userPolicies.policyUuid}
          join ${accesses} on ${accesses.id} = ${policyAccesses.accessId}
          where ${userPolicies.userUuid} = ${userUuid}
        order by via`,
  );
  return rows.map((r) => r.access);
}

/** The user the wazo_user backend resolved for this login (stashed in `args.user`). */
export function loginUser(args: LoginArgs): { uuid: string; tenantUuid: string; purpose: string } | null {
  return (args.user as { uuid: string; tenantUuid: string; purpose: string } | undefined) ?? null;
}

const STOCK_BY_PURPOSE: Record<string, string> = {
  user: "default_user",
  internal: "default_internal",
  external_api: "default_external_api",
};

/**
 * Token metadata (§12.2): the base `{uuid, tenant_uuid, auth_id, pbx_user_uuid, xivo_uuid}`, then
 * the outputs of the metadata plugins of the user's purpose, merged in order (later keys win).
 */
export async function userMetadata(app: AppContext, login: string, args: LoginArgs): Promise<Record<string, unknown>> {
  const user = await findLoginUser(app.db, login, args);
  if (!user) return { auth_id: null, username: login, xivo_uuid: app.xivoUuid, pbx_user_uuid: null };
  args.user = { uuid: user.uuid, tenantUuid: user.tenantUuid, purpose: user.purpose };
  const metadata: Record<string, unknown> = {
    uuid: user.uuid,
    tenant_uuid: user.tenantUuid,
    auth_id: user.uuid,
    pbx_user_uuid: null,
    xivo_uuid: app.xivoUuid,
  };
  const mapping = app.config.purpose_metadata_mapping as Record<string, string[]>;
  const names = [STOCK_BY_PURPOSE[user.purpose], ...(mapping[user.purpose] ?? [])].filter((n): n is string =>
    Boolean(n),
  );
  for (const name of names) {
    const plugin = app.plugins.metadata.get(name);
    if (plugin) Object.assign(metadata, await plugin.getTokenMetadata(login, args));
  }
  return metadata;
}

/** True when the user holds a policy with `policySlug` or is a member of a group with `groupSlug`. */
export async function hasPolicyOrGroupSlug(
  db: DbOrTx,
  userUuid: string,
  policySlug: string,
  groupSlug: string,
): Promise<boolean> {
  const viaPolicy = await db
    .select({ uuid: policies.uuid })
    .from(userPolicies)
    .innerJoin(policies, eq(policies.uuid, userPolicies.policyUuid))
    .where(and(eq(userPolicies.userUuid, userUuid), eq(policies.slug, policySlug)))
    .limit(1);
  if (viaPolicy.length) return true;
  const viaGroup = await db
    .select({ uuid: groups.uuid })
    .from(userGroups)
    .innerJoin(groups, eq(groups.uuid, userGroups.groupUuid))
    .where(and(eq(userGroups.userUuid, userUuid), eq(groups.slug, groupSlug)))
    .limit(1);
  return viaGroup.length > 0;
}
