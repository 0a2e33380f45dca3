// The second-factor step of a login (issue 25), run once the password (or the IdP) accepted the
// user. A user without a factor passes untouched (its login read already said so: no statement,
// unless some tenant has an MFA policy: then one query tells whether the user's tenant requires it);
// a user with one must send `mfa_code` (a TOTP code or a recovery code) in the body, or append the
// current TOTP code to its password (FreeIPA's convention, for Basic-only clients such as
// wazo_auth_client's `token.new()`). A wrong code is a failed login, counted by the throttling.
import type { AppContext } from "../../context.ts";
import { inTransaction } from "../../db/tx.ts";
import { AuthenticationFailed, MfaRequired, invalidField } from "../../domain/errors.ts";
import type { LoginArgs } from "../../plugins/types.ts";
import { recordMfa } from "../../metrics.ts";
import { MFA_METHODS, hasConfirmedFactor, publishMfaEvent, useSecondFactor, wrongCode } from "./mfa.ts";
import { MFA_ENROL_ONLY_ACL, tenantRequiresMfa } from "./mfa-policy.ts";
import { knownLoginUser } from "./user-auth.ts";
import { assertNotThrottled, countFailure } from "./login-throttle.ts";
import type { UserRow } from "../identity/visibility.ts";

export interface SecondFactorOutcome {
  /** Set when the user must enrol first: the token gets this ACL and nothing else. */
  enrolOnlyAcl: string[] | null;
}

const PASS: SecondFactorOutcome = { enrolOnlyAcl: null };

/**
 * Throws `mfa-required` (no code given: nothing created, nothing counted) or AuthenticationFailed
 * (wrong, expired or replayed code: the login pipeline counts it like a wrong password).
 */
export async function secondFactorStep(
  app: AppContext,
  args: LoginArgs,
  login: string,
  mfaCode: string | undefined,
): Promise<SecondFactorOutcome> {
  const user = knownLoginUser(args, login);
  if (!user) return PASS; // not a user of this database (an external backend's login)
  if (!user.mfaEnabled) {
    if (!user.mfaPoliciesSet || user.purpose === "internal" || !(await tenantRequiresMfa(app, user.tenantUuid)))
      return PASS;
    recordMfa("restricted");
    return { enrolOnlyAcl: MFA_ENROL_ONLY_ACL };
  }
  const code = mfaCode ?? (typeof args.mfaAppendedCode === "string" ? args.mfaAppendedCode : undefined);
  if (!code) {
    recordMfa("required");
    throw new MfaRequired(MFA_METHODS);
  }
  if (await useSecondFactor(app, user.uuid, code)) {
    recordMfa("accepted");
    return PASS;
  }
  await refused(app, user);
  throw new AuthenticationFailed();
}

async function refused(app: AppContext, user: { uuid: string; tenantUuid: string }): Promise<void> {
  recordMfa("refused");
  await inTransaction(app, (tx) => publishMfaEvent(app, tx, "failed", user));
}

/**
 * A code a signed-in user gives to prove it holds its factor (removing it through `me`): the same
 * check as a login, throttled as one (a stolen token cannot guess its way to removing the factor).
 */
export async function requireOwnCode(
  app: AppContext,
  user: UserRow,
  code: string | undefined,
  origin: { address: string; forwarded: boolean },
): Promise<void> {
  if (!(await hasConfirmedFactor(app, user.uuid))) return; // nothing to prove: removal is a no-op or drops a pending enrolment
  if (!code)
    throw invalidField(
      "mfa",
      "code",
      "required",
      true,
      "A current code (or a recovery code) is required to remove a confirmed factor",
    );
  const subject = {
    action: "login" as const,
    login: user.username ?? user.uuid,
    remoteAddr: origin.address,
    forwarded: origin.forwarded,
  };
  await assertNotThrottled(app, subject, "mfa");
  if (await useSecondFactor(app, user.uuid, code)) return;
  recordMfa("refused");
  await inTransaction(app, async (tx) => {
    await publishMfaEvent(app, tx, "failed", user);
    await countFailure(app, tx, subject);
  });
  throw wrongCode();
}
