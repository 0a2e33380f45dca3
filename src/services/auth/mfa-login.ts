// The second-factor step of a login (issue 25), run once the password (or the IdP) accepted the
// user. A user without a factor passes untouched (its login read already said so: no statement,
// unless some tenant has an MFA policy: then one query tells whether the user's tenant requires it);
// a user with one must send `mfa_code` (a TOTP code or a recovery code) in the body, or append the
// current TOTP code to its password (FreeIPA's convention, for Basic-only clients such as
// wazo_auth_client's `token.new()`). A wrong code is a failed login, counted by the throttling.
import type { AppContext } from "../../boot/context.ts";
import { inTransaction } from "../../db/tx.ts";
import { AuthenticationFailed, MfaRequired, invalidField } from "../../domain/errors.ts";
import type { LoginArgs } from "../../plugins/types.ts";
import { recordMfa } from "../../observe/metrics.ts";
import { factorMethods, hasConfirmedFactor, publishMfaEvent, useSecondFactor, wrongCode } from "./mfa.ts";
import { type RelyingParty, verifyPasskeyAssertion } from "./webauthn.ts";
import { mfaRestrictedAcl } from "./mfa-policy.ts";
import { knownLoginUser } from "./user-auth.ts";
import { assertNotThrottled, countFailure } from "./login-throttle.ts";
import { assertSecondFactorOpen, countSecondFactorFailure, forgetSecondFactorFailures } from "./second-factor-lock.ts";
import type { UserRow } from "../identity/visibility.ts";

export interface SecondFactorOutcome {
  /** Set when the user must enrol first: the token gets this ACL and nothing else. */
  enrolOnlyAcl: string[] | null;
  /** A code was given and accepted (RFC 8176 `otp`: the ID token's `amr` says so). */
  codeAccepted?: boolean;
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
  if (!user.mfaEnabled) return { enrolOnlyAcl: await mfaRestrictedAcl(app, user) };
  const code = mfaCode ?? (typeof args.mfaAppendedCode === "string" ? args.mfaAppendedCode : undefined);
  if (!code) {
    recordMfa("required");
    throw new MfaRequired(await factorMethods(app, user.uuid));
  }
  const open = await assertSecondFactorOpen(app, user.uuid, "tokens");
  if (await useSecondFactor(app, user.uuid, code)) {
    recordMfa("accepted");
    await forgetSecondFactorFailures(app, user.uuid, open.failures);
    return { enrolOnlyAcl: null, codeAccepted: true };
  }
  await refused(app, user);
  throw new AuthenticationFailed();
}

/** A wrong code of a login: the event and the account's second-factor count (the login pipeline counts the rest). */
async function refused(app: AppContext, user: { uuid: string; tenantUuid: string }): Promise<void> {
  recordMfa("refused");
  await inTransaction(app, async (tx) => {
    await publishMfaEvent(app, tx, "failed", user);
    await countSecondFactorFailure(app, tx, user.uuid);
  });
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
  if (!(await throttledSecondFactor(app, user, code, origin, user.username ?? user.uuid))) throw wrongCode();
}

/** What proves a factor to remove a passkey through `me`: a code, or a passkey assertion. */
export interface FactorProof {
  code?: string;
  challenge_id?: string;
  credential?: unknown;
}

/**
 * Proof that a signed-in user holds a factor, to remove one of its passkeys through `me` (as TOTP
 * removal asks for a code: a stolen token alone cannot strip a user's factors): a current TOTP or
 * recovery code, or a fresh assertion of one of its passkeys (WebAuthn §7.2, options from POST
 * /users/me/mfa/passkeys/assertion). Throttled and counted as a login's second factor. A user with
 * no factor left has nothing to prove (the removal is a no-op).
 */
export async function requireFactorProof(
  app: AppContext,
  user: UserRow,
  proof: FactorProof,
  rp: RelyingParty,
  origin: { address: string; forwarded: boolean },
): Promise<void> {
  if (!(await factorMethods(app, user.uuid)).length) return;
  const login = user.username ?? user.uuid;
  if (proof.challenge_id !== undefined) {
    const subject = { action: "login" as const, login, remoteAddr: origin.address, forwarded: origin.forwarded };
    await assertNotThrottled(app, subject, "mfa");
    const open = await assertSecondFactorOpen(app, user.uuid, "mfa");
    if (await verifyPasskeyAssertion(app, rp, proof.challenge_id, proof.credential, user.uuid))
      return forgetSecondFactorFailures(app, user.uuid, open.failures);
    await countWrongFactor(app, user, subject);
    throw invalidField("mfa", "credential", "webauthn", "an assertion of one of your passkeys", "Passkey not verified");
  }
  if (!proof.code)
    throw invalidField(
      "mfa",
      "code",
      "required",
      true,
      "A current code, a recovery code or a passkey assertion (challenge_id, credential) is required",
    );
  if (!(await throttledSecondFactor(app, user, proof.code, origin, login))) throw wrongCode();
}

/**
 * A code checked as a login checks it: refused (429) while the login is throttled, and a wrong
 * code is a failed login (counted, `auth_user_mfa_failed`). Used by `me` removals and the hosted
 * login page's second-factor step (services/oidc/mfa-sign-in.ts).
 */
export async function throttledSecondFactor(
  app: AppContext,
  user: { uuid: string; tenantUuid: string },
  code: string,
  origin: { address: string; forwarded: boolean },
  login: string,
): Promise<"totp" | "recovery_code" | null> {
  const subject = { action: "login" as const, login, remoteAddr: origin.address, forwarded: origin.forwarded };
  await assertNotThrottled(app, subject, "mfa");
  const open = await assertSecondFactorOpen(app, user.uuid, "mfa");
  const used = await useSecondFactor(app, user.uuid, code);
  if (used) {
    recordMfa("accepted");
    await forgetSecondFactorFailures(app, user.uuid, open.failures);
    return used;
  }
  await countWrongFactor(app, user, subject);
  return null;
}

/** A wrong code or refused passkey: MFA metric, event, throttling counters and the account's second-factor count, in one transaction. */
export async function countWrongFactor(
  app: AppContext,
  user: { uuid: string; tenantUuid: string },
  subject: { action: "login"; login: string; remoteAddr: string; forwarded: boolean },
): Promise<void> {
  recordMfa("refused");
  await inTransaction(app, async (tx) => {
    await publishMfaEvent(app, tx, "failed", user);
    await countFailure(app, tx, subject);
    await countSecondFactorFailure(app, tx, user.uuid);
  });
}
