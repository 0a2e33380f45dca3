// What the wazo_user backend needs of users: login resolution (COMPATIBILITY.md §10.3), password
// check (§10.2), the token ACL from policies (§4.4) and the token metadata (§12.2).
import { and, eq, sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import type { DbOrTx } from "../db/index.ts";
import { accesses, emails, groupPolicies, policyAccesses, userGroups, userPolicies, users } from "../db/schema.ts";
import type { LoginArgs } from "../plugins/types.ts";
import { verifyPassword } from "./passwords.ts";

export type UserRow = typeof users.$inferSelect;

/** Enabled user by confirmed email, else by username; case-insensitive. */
export async function findUserByLogin(db: DbOrTx, login: string): Promise<UserRow | null> {
  const byEmail = await db
    .select({ user: users })
    .from(emails)
    .innerJoin(users, eq(emails.userUuid, users.uuid))
    .where(and(sql`lower(${emails.address}) = lower(${login})`, eq(emails.confirmed, true), eq(users.enabled, true)))
    .limit(1);
  if (byEmail[0]) return byEmail[0].user;
  const byName = await db
    .select()
    .from(users)
    .where(and(sql`lower(${users.username}) = lower(${login})`, eq(users.enabled, true)))
    .limit(1);
  return byName[0] ?? null;
}

export async function checkUserPassword(app: AppContext, login: string, password: string): Promise<boolean> {
  const user = await findUserByLogin(app.db, login);
  return verifyPassword(
    password,
    user ? { hash: user.passwordHash, salt: user.passwordSalt, iterations: user.passwordIterations } : null,
    app.config.password_hash_iterations,
  );
}

/** ACL of every policy of every group of the user, then of its own policies (duplicates kept). */
export async function userAcl(db: DbOrTx, userUuid: string): Promise<string[]> {
  const viaGroups = await db
    .select({ access: accesses.access })
    .from(userGroups)
    .innerJoin(groupPolicies, eq(groupPolicies.groupUuid, userGroups.groupUuid))
    .innerJoin(policyAccesses, eq(policyAccesses.policyUuid, groupPolicies.policyUuid))
    .innerJoin(accesses, eq(accesses.id, policyAccesses.accessId))
    .where(eq(userGroups.userUuid, userUuid));
  const direct = await db
    .select({ access: accesses.access })
    .from(userPolicies)
    .innerJoin(policyAccesses, eq(policyAccesses.policyUuid, userPolicies.policyUuid))
    .innerJoin(accesses, eq(accesses.id, policyAccesses.accessId))
    .where(eq(userPolicies.userUuid, userUuid));
  return [...viaGroups.map((r) => r.access), ...direct.map((r) => r.access)];
}

/** Base metadata (§12.2) plus the purpose's stock fields. */
export async function userMetadata(app: AppContext, login: string, _args: LoginArgs): Promise<Record<string, unknown>> {
  const user = await findUserByLogin(app.db, login);
  if (!user) return { auth_id: null, username: login, xivo_uuid: app.xivoUuid, pbx_user_uuid: null };
  return {
    uuid: user.uuid,
    tenant_uuid: user.tenantUuid,
    auth_id: user.uuid,
    pbx_user_uuid: user.purpose === "user" ? user.uuid : null,
    xivo_uuid: app.xivoUuid,
    purpose: user.purpose,
  };
}
