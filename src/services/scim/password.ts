// A password a directory sends on PUT or PATCH (Okta's password sync): set when it differs from
// the user's current one — under the tenant's password policy, ending the user's sessions and
// refresh tokens as any new password does — and ignored when it is the same (a directory resending
// the whole user must not sign the user out) or when the user's password lives in an identity
// provider (LDAP, SAML).
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { users } from "../../db/schema.ts";
import { eq } from "drizzle-orm";
import type { Caller } from "../../domain/caller.ts";
import { recordAudit, secretChange } from "../audit/record.ts";
import { effectiveMethod } from "../auth/identity-providers.ts";
import { enforcePasswordPolicy } from "../auth/password-policy.ts";
import { hashPassword, verifyPassword } from "../auth/passwords.ts";
import { revokeUserAccess } from "../auth/refresh-tokens.ts";
import { publishEvent, routingKey } from "../events.ts";
import type { UserRow } from "../identity/visibility.ts";

export async function syncPassword(
  app: AppContext,
  tx: DbOrTx,
  caller: Caller,
  user: UserRow,
  password: string,
  logins: string[],
): Promise<void> {
  if ((await effectiveMethod(tx, user.authenticationMethod, user.tenantUuid)) !== "native") return;
  const stored = { hash: user.passwordHash, salt: user.passwordSalt, iterations: user.passwordIterations };
  if (user.passwordHash && (await verifyPassword(password, stored, app.config))) return;
  await enforcePasswordPolicy(app, tx, { tenantUuid: user.tenantUuid, password, logins, field: "password" });
  const hash = await hashPassword(password, app.config);
  await tx
    .update(users)
    .set({
      passwordHash: hash.hash,
      passwordSalt: hash.salt,
      passwordIterations: hash.iterations,
      passwordChangeRequired: false,
    })
    .where(eq(users.uuid, user.uuid));
  await revokeUserAccess(app, tx, user);
  await recordAudit(app, tx, caller, {
    action: "user.password.set",
    target: { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid },
    changes: [secretChange("password")],
  });
  await publishEvent(app, tx, {
    name: "auth_user_password_changed",
    routingKey: routingKey("auth.users.{user_uuid}.password.updated", { user_uuid: user.uuid }),
    data: { uuid: user.uuid, tenant_uuid: user.tenantUuid },
    tenantUuid: user.tenantUuid,
    userUuid: user.uuid,
    aggregate: `user:${user.uuid}`,
  });
}
