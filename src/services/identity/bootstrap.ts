// The bootstrap administrator (wazo-auth's start-up policy sync step 5): an `internal` user of the master
// tenant holding `wazo_default_master_user_policy` (ACL `#`). Idempotent.
import { and, eq, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { groups, policies, userGroups, userPolicies, users } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { hashPassword } from "../auth/passwords.ts";
import { enforcePasswordPolicy, passwordRefusal } from "../auth/password-policy.ts";

export interface BootstrapResult {
  userUuid: string;
  created: boolean;
}

/**
 * Creates the administrator when absent, its password checked against the master tenant's password
 * policy (an `InvalidData` naming the rule); an existing one keeps its password and gets the policy.
 */
export async function bootstrapUser(app: AppContext, username: string, password: string): Promise<BootstrapResult> {
  const policySlug = app.config.bootstrap_user_policy_slug;
  const known = async (db: typeof app.db) =>
    (await db.select({ uuid: users.uuid }).from(users).where(sql`lower(${users.username}) = lower(${username})`))[0];
  if (!(await known(app.db)))
    await enforcePasswordPolicy(app, app.db, {
      tenantUuid: app.topTenantUuid,
      password,
      logins: [username],
      field: "password",
    });
  const hash = await hashPassword(password, app.config);
  return inTransaction(app, async (tx) => {
    const [policy] = await tx
      .select({ uuid: policies.uuid })
      .from(policies)
      .where(and(eq(policies.tenantUuid, app.topTenantUuid), sql`lower(${policies.slug}) = lower(${policySlug})`));
    if (!policy) throw new Error(`bootstrap policy "${policySlug}" does not exist in the master tenant`);
    const existing = await known(tx);
    let userUuid = existing?.uuid;
    if (!userUuid) {
      const [row] = await tx
        .insert(users)
        .values({
          username,
          tenantUuid: app.topTenantUuid,
          purpose: app.config.bootstrap_user_purpose,
          authenticationMethod: "native",
          passwordHash: hash.hash,
          passwordSalt: hash.salt,
          passwordIterations: hash.iterations,
        })
        .returning({ uuid: users.uuid });
      userUuid = row!.uuid;
      const [allUsers] = await tx
        .select({ uuid: groups.uuid })
        .from(groups)
        .where(and(eq(groups.tenantUuid, app.topTenantUuid), eq(groups.systemManaged, true)));
      if (allUsers) await tx.insert(userGroups).values({ groupUuid: allUsers.uuid, userUuid }).onConflictDoNothing();
    }
    await tx.insert(userPolicies).values({ userUuid, policyUuid: policy.uuid }).onConflictDoNothing();
    return { userUuid, created: !existing };
  });
}

export async function bootstrapOnStartup(app: AppContext): Promise<void> {
  const c = app.config;
  if (!c.bootstrap_user_on_startup) return;
  if (!c.bootstrap_user_username || !c.bootstrap_user_password) {
    throw new Error("bootstrap_user_on_startup needs bootstrap_user_username and bootstrap_user_password");
  }
  const result = await bootstrapUser(app, c.bootstrap_user_username, c.bootstrap_user_password).catch((e) => {
    const refusal = passwordRefusal(e);
    if (refusal) throw new Error(`bootstrap_user_password is refused by the password policy: ${refusal}`);
    throw e;
  });
  app.log.info(result.created ? "bootstrap user created" : "bootstrap user already present", {
    username: c.bootstrap_user_username,
    uuid: result.userUuid,
  });
}

/** A first start (no user at all) says, in one line, how to create the first administrator. */
export async function adviseFirstAdministrator(app: AppContext): Promise<void> {
  const [anyUser] = await app.db.select({ uuid: users.uuid }).from(users).limit(1);
  if (anyUser) return;
  app.log.warn(
    "no user yet: create the first administrator with `npm run bootstrap -- NAME PASSWORD` (single executable: `tessera bootstrap NAME PASSWORD`), " +
      "or set bootstrap_user_on_startup: true with bootstrap_user_username and bootstrap_user_password",
  );
}
