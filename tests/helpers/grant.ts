// The grant invariant the tests check (docs/security.md): what a user's ACL gained must be what
// the caller could have granted, and a deny entry it lost must be one the caller could lift.
import type { GrantCheck } from "../../src/domain/acl-grant.ts";
import { eq } from "drizzle-orm";
import { users } from "../../src/db/schema.ts";
import { defaultPolicyAcl } from "../../src/services/auth/authentication.ts";
import { withSelfService } from "../../src/services/auth/mfa-policy.ts";
import { userAcl } from "../../src/services/auth/user-auth.ts";
import type { TestApp } from "./app.ts";

/**
 * The ACL a native login of `user` would carry (wazo_user backend: default policy, groups, own; then
 * `mfa.self_service`'s entry for a user of purpose `user`, which no caller grants).
 */
export async function effectiveAcl(t: TestApp, user: string): Promise<string[]> {
  const [row] = await t.app.db.select({ purpose: users.purpose }).from(users).where(eq(users.uuid, user));
  const acl = [...(await defaultPolicyAcl(t.app, "wazo_user")), ...(await userAcl(t.app.db, user))];
  return withSelfService(t.app, row?.purpose, acl);
}

export async function aclSnapshot(t: TestApp, users: string[]): Promise<Map<string, string[]>> {
  return new Map(await Promise.all(users.map(async (u) => [u, await effectiveAcl(t, u)] as const)));
}

/** What `before → after` gave the user that `rule` would not have let the caller give. */
export function ungranted(rule: GrantCheck, before: string[], after: string[]): string[] {
  const gained = after.filter((e) => !before.includes(e) && !rule.mayGrant(e));
  const liftedDenies = before.filter((e) => e.startsWith("!") && !after.includes(e) && !rule.mayRevoke(e));
  return [...gained, ...liftedDenies];
}
