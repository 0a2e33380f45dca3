// DELETE /0.1/users/{user_uuid}/login-failures and `tessera users unlock`: an authorised
// administrator forgets the failed logins of every login name of a user (its username and email
// addresses: the per-login counts and the per login-and-address locks), so a user locked out on
// the addresses it used logs in again at once. Address locks stay: they hold the attackers'
// addresses, not the user. The user's second-factor lock ends too.
import { and, eq, inArray, or, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { emails, loginThrottle, users } from "../../db/schema.ts";
import { afterCommit, inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { recordAudit } from "../audit/record.ts";
import { publishEvent, routingKey } from "../events.ts";
import { tenantVisible } from "../identity/visibility.ts";
import { forgetPairLocks } from "./login-throttle.ts";
import { SECOND_FACTOR_KIND } from "./second-factor-lock.ts";
import { normaliseLogin } from "./throttle-keys.ts";

/** The channel telling every instance to drop the pair locks it remembers (LockCache). */
export const UNLOCK_CHANNEL = "tessera_login_unlocked";

/**
 * Forgets the user's login failures; true when the user is visible to the caller. A user the
 * caller cannot see is left untouched and the answer is the same as for an absent one (D4 of docs/wazo-auth-differences.md: 204).
 */
export async function unlockUserLogins(app: AppContext, caller: Caller, userUuid: string): Promise<boolean> {
  return inTransaction(app, async (tx) => {
    const [user] = await tx.select().from(users).where(eq(users.uuid, userUuid));
    if (!user || !(await tenantVisible(app, caller, user.tenantUuid, tx))) return false;
    const addresses = await tx.select({ address: emails.address }).from(emails).where(eq(emails.userUuid, user.uuid));
    const names = [
      ...new Set(
        [user.username, ...addresses.map((e) => e.address)].filter((n): n is string => !!n).map(normaliseLogin),
      ),
    ];
    // Unconditional: a user without a login name may still hold a second-factor lock (inArray of none is false).
    const cleared = await tx
      .delete(loginThrottle)
      .where(
        or(
          and(eq(loginThrottle.kind, "login"), inArray(loginThrottle.key, names)),
          // The per-account second-factor lock (second-factor-lock.ts), keyed by the user.
          and(eq(loginThrottle.kind, SECOND_FACTOR_KIND), eq(loginThrottle.key, user.uuid)),
          // A pair key is `login \n address`; an address key never holds a newline.
          and(
            eq(loginThrottle.kind, "login_address"),
            inArray(sql`regexp_replace(${loginThrottle.key}, E'\\n[^\\n]*$', '')`, names),
          ),
        ),
      )
      .returning({ kind: loginThrottle.kind });
    await tx.execute(sql`select pg_notify(${UNLOCK_CHANNEL}, '')`);
    afterCommit(tx, () => forgetPairLocks(app));
    await publishEvent(app, tx, {
      name: "auth_user_login_failures_deleted",
      routingKey: routingKey("auth.users.{user_uuid}.login_failures.deleted", { user_uuid: user.uuid }),
      data: {
        user_uuid: user.uuid,
        tenant_uuid: user.tenantUuid,
        counters_cleared: cleared.length,
        by: caller.userUuid,
      },
      tenantUuid: user.tenantUuid,
      userUuid: user.uuid,
      aggregate: `user:${user.uuid}`,
    });
    await recordAudit(app, tx, caller, {
      action: "user.login_failures.delete",
      target: { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid },
      changes: [{ field: "counters_cleared", old: null, new: cleared.length }],
    });
    app.log.info("login failures cleared", { user_uuid: user.uuid, counters: cleared.length, by: caller.userUuid });
    return true;
  });
}
