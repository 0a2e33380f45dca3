// The per-account second-factor lock (NIST SP 800-63B §5.2.2: at most 100 consecutive failed
// attempts on one account). Wrong second-factor codes (TOTP, recovery codes, passkey assertions)
// are counted per user, whatever the client address, in `tessera_login_throttle` (kind
// `second_factor`, key the user's uuid), shared by every instance; at
// `login_throttling.max_second_factor_failures` the second factor is locked for
// `failure_reset_seconds`, until then every attempt is refused (429 `second-factor-locked`) before
// any code is checked. The password was proven before any of this runs, so nobody can lock a
// stranger's account. A right code forgets the count (the failures must be consecutive); an
// administrator's DELETE /0.1/users/{user_uuid}/login-failures ends the lock (login-unlock.ts).
import { and, eq } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { loginThrottle } from "../../db/schema.ts";
import { afterCommit } from "../../db/tx.ts";
import { SecondFactorLocked, ServiceUnavailable } from "../../domain/errors.ts";
import { type CounterKey, msUntil, seconds, upsertFailure } from "./login-throttle.ts";

export const SECOND_FACTOR_KIND = "second_factor";

const counterOf = (app: AppContext, userUuid: string): CounterKey => ({
  kind: SECOND_FACTOR_KIND,
  key: userUuid,
  threshold: app.config.login_throttling.max_second_factor_failures,
  by: "second_factor",
  locks: true,
});
const thisUser = (userUuid: string) => and(eq(loginThrottle.kind, SECOND_FACTOR_KIND), eq(loginThrottle.key, userUuid));

/**
 * Throws 429 `second-factor-locked` (with Retry-After) while the user's second factor is locked,
 * 503 when that cannot be checked (an outage never lets a guess through). Otherwise says whether
 * wrong codes are on record (a right code then forgets them).
 */
export async function assertSecondFactorOpen(
  app: AppContext,
  userUuid: string,
  resource: string,
): Promise<{ failures: boolean }> {
  if (!app.config.login_throttling.enabled) return { failures: false };
  let row: { leftMs: number } | undefined;
  try {
    [row] = await app.db
      .select({ leftMs: msUntil(loginThrottle.lockedUntil) })
      .from(loginThrottle)
      .where(thisUser(userUuid));
  } catch (e) {
    app.log.error("second-factor lock check failed", { error: (e as Error).message });
    throw new ServiceUnavailable(resource, "The service cannot check second-factor attempts now; try again later");
  }
  if (row && row.leftMs > 0) throw new SecondFactorLocked(resource, seconds(row.leftMs));
  return { failures: !!row };
}

/** One wrong code of the user, in `tx`: the lock is set (for the whole window) when it reaches the threshold. */
export async function countSecondFactorFailure(app: AppContext, tx: DbOrTx, userUuid: string): Promise<void> {
  const c = app.config.login_throttling;
  if (!c.enabled) return;
  const window = c.failure_reset_seconds;
  const counted = await upsertFailure(tx, counterOf(app, userUuid), {
    wait_increment_seconds: window,
    max_wait_seconds: window,
    failure_reset_seconds: window,
  });
  if (counted?.lockedNow)
    afterCommit(tx, () =>
      app.log.warn("second factor locked", {
        user_uuid: userUuid,
        failures: counted.failures,
        retry_after: seconds(counted.leftMs),
      }),
    );
}

/** A right code: the failures before it were not consecutive with the next ones (only when some are on record). */
export async function forgetSecondFactorFailures(app: AppContext, userUuid: string, failures: boolean): Promise<void> {
  if (!failures) return;
  try {
    await app.db.delete(loginThrottle).where(thisUser(userUuid));
  } catch (e) {
    app.log.warn("could not clear the second-factor failures of a user", { error: (e as Error).message });
  }
}
