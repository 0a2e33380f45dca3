// The hosted login page's second step (issue 25). A password accepted for a user with a factor
// leaves a pending sign-in: a random handle (stored hashed) bound to the browser's CSRF cookie,
// five minutes, at most five wrong attempts. The step proves a TOTP or recovery code, or a passkey,
// or — the tenant requiring MFA and the user having none — enrols TOTP first. Then the token is
// issued as the login would have issued it (sign-in.ts provenSignIn), and the browser session and the
// code record every factor used (RFC 8176 `amr`).
// Passwordless: a passkey with user verification alone, where the user's tenant allows it.
// A user who must change its password (docs/security.md) chooses the new one at a `password` stage,
// after the second factor when there is one.
import { createHash, randomBytes } from "node:crypto";
import { and, eq, gt, lt, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { pendingSignIns, users } from "../../db/schema.ts";
import { AuthenticationFailed, type ProvenPassword } from "../../domain/errors.ts";
import { assertNotThrottled, countFailure } from "../auth/login-throttle.ts";
import { inTransaction } from "../../db/tx.ts";
import { selfActor } from "../audit/record.ts";
import { confirmTotp, factorMethods, pendingTotpEnrolment, startTotpEnrolment, wrongCode } from "../auth/mfa.ts";
import { countWrongFactor, throttledSecondFactor } from "../auth/mfa-login.ts";
import { assertSecondFactorOpen, forgetSecondFactorFailures } from "../auth/second-factor-lock.ts";
import { tenantAllowsPasswordless } from "../auth/mfa-policy.ts";
import { type RelyingParty, startPasskeyAuthentication, verifyPasskeyAssertion } from "../auth/webauthn.ts";
import type { UserRow } from "../identity/visibility.ts";
import { setPassword } from "../identity/users.ts";
import type { BrowserOrigin } from "./sign-in.ts";

const PENDING_MS = 300_000;
const MAX_ATTEMPTS = 5;

const sha = (v: string) => createHash("sha256").update(v).digest("hex");

export type Stage = "verify" | "enrol" | "enrolled" | "password";

/** What a finished step proved: whose sign-in, and the factors used (RFC 8176 §2). */
export interface Proven {
  proven: ProvenPassword;
  amr: string[];
  /** The key of the second step's stored row it came from (what that sign-in left waiting for it: an upstream session). */
  stepHash?: string;
}

export interface Pending {
  handle: string;
  row: typeof pendingSignIns.$inferSelect;
  user: UserRow;
  /** What the user can give at the `verify` stage: `totp`, `recovery_code`, `passkey`. */
  methods: string[];
}

/** The browser the pending sign-in belongs to (its CSRF cookie), and the client it is for (null: the account page). */
export interface Binding {
  browser: string;
  clientId: string | null;
}

export async function startPendingSignIn(
  app: AppContext,
  proven: ProvenPassword,
  stage: Stage,
  binding: Binding,
  /**
   * The factors already proven: the first factor (`pwd`, or `saml`/`oidc` after the tenant's
   * identity provider), or all of them for a `password` stage after the second factor.
   */
  amr: string[] = ["pwd"],
): Promise<string> {
  const handle = randomBytes(32).toString("base64url");
  await app.db.insert(pendingSignIns).values({
    handleHash: sha(handle),
    browserHash: sha(binding.browser),
    userUuid: proven.userUuid,
    login: proven.login,
    method: proven.method,
    backendName: proven.backendName,
    stage,
    clientId: binding.clientId,
    amr,
    expiresAt: new Date(Date.now() + PENDING_MS),
  });
  return handle;
}

export async function loadPending(
  app: AppContext,
  handle: string | undefined,
  binding: Binding,
): Promise<Pending | null> {
  if (!handle) return null;
  const [found] = await app.db
    .select({ row: pendingSignIns, user: users })
    .from(pendingSignIns)
    .innerJoin(users, eq(users.uuid, pendingSignIns.userUuid))
    .where(and(eq(pendingSignIns.handleHash, sha(handle)), gt(pendingSignIns.expiresAt, new Date())));
  if (!found || found.row.browserHash !== sha(binding.browser) || found.row.clientId !== binding.clientId) return null;
  if (!found.user.enabled) return null;
  return { handle, row: found.row, user: found.user, methods: await factorMethods(app, found.user.uuid) };
}

/** What the pending sign-in's first step proved (RFC 8176 §2): the second factor adds to it. */
const firstFactor = (p: Pending): string[] => (p.row.amr?.length ? p.row.amr : ["pwd"]);

const originOf = (origin: BrowserOrigin) => ({ address: origin.remoteAddr, forwarded: origin.forwarded });

/** What the step's attempts are throttled and counted against: the sign-in's login and the browser's address. */
const loginSubject = (p: Pending, origin: BrowserOrigin) => ({
  action: "login" as const,
  login: p.row.login,
  remoteAddr: origin.remoteAddr,
  forwarded: origin.forwarded,
});

/** A wrong attempt: the sixth ends the pending sign-in (the password must be given again). */
async function spendAttempt(app: AppContext, p: Pending): Promise<void> {
  const [row] = await app.db
    .update(pendingSignIns)
    .set({ attempts: sql`${pendingSignIns.attempts} + 1` })
    .where(eq(pendingSignIns.handleHash, p.row.handleHash))
    .returning({ attempts: pendingSignIns.attempts });
  if ((row?.attempts ?? MAX_ATTEMPTS) >= MAX_ATTEMPTS)
    await app.db.delete(pendingSignIns).where(eq(pendingSignIns.handleHash, p.row.handleHash));
}

/** The `verify` stage with a code: the factors used, or null (counted as a failed login). */
export async function verifyCode(
  app: AppContext,
  p: Pending,
  code: string,
  origin: BrowserOrigin,
): Promise<string[] | null> {
  if (p.row.stage !== "verify") return null;
  if (await throttledSecondFactor(app, p.user, code.trim(), originOf(origin), p.row.login))
    return [...firstFactor(p), "otp", "mfa"];
  await spendAttempt(app, p);
  return null;
}

export async function passkeyOptions(app: AppContext, rp: RelyingParty, p: Pending | null) {
  return startPasskeyAuthentication(app, rp, p ? p.user.uuid : null);
}

/** The `verify` stage with a passkey (the second factor: user verification preferred, not required). */
export async function verifyPasskey(
  app: AppContext,
  p: Pending,
  rp: RelyingParty,
  challengeId: string,
  credential: unknown,
  origin: BrowserOrigin,
): Promise<string[] | null> {
  const subject = loginSubject(p, origin);
  await assertNotThrottled(app, subject, "mfa");
  const open = await assertSecondFactorOpen(app, p.user.uuid, "mfa");
  const ok =
    p.row.stage === "verify" ? await verifyPasskeyAssertion(app, rp, challengeId, credential, p.user.uuid) : null;
  if (ok) {
    await forgetSecondFactorFailures(app, p.user.uuid, open.failures);
    return [...firstFactor(p), ok.amr, "mfa"];
  }
  await countWrongFactor(app, p.user, subject);
  await spendAttempt(app, p);
  return null;
}

/** The `enrol` stage: a TOTP enrolment to show (restarted at each showing until confirmed). */
export async function startEnrolment(app: AppContext, p: Pending) {
  if (p.row.stage !== "enrol") throw new AuthenticationFailed();
  return (await pendingTotpEnrolment(app, p.user)) ?? startTotpEnrolment(app, p.user);
}

/** Confirms the enrolment (a wrong code counts as a failed login); the recovery codes, shown once. */
export async function confirmEnrolment(
  app: AppContext,
  p: Pending,
  code: string,
  origin: BrowserOrigin,
): Promise<string[]> {
  if (p.row.stage !== "enrol") throw new AuthenticationFailed();
  const subject = loginSubject(p, origin);
  await assertNotThrottled(app, subject, "mfa");
  await assertSecondFactorOpen(app, p.user.uuid, "mfa");
  try {
    const { recovery_codes } = await confirmTotp(app, p.user, code.trim(), selfActor(p.user, origin));
    await app.db
      .update(pendingSignIns)
      .set({ stage: "enrolled", amr: [...firstFactor(p), "otp", "mfa"] })
      .where(eq(pendingSignIns.handleHash, p.row.handleHash));
    return recovery_codes;
  } catch (e) {
    if (e instanceof Error && e.message === wrongCode().message) {
      await countWrongFactor(app, p.user, subject);
      await spendAttempt(app, p);
    }
    throw e;
  }
}

/**
 * The `password` stage: the user's new password (the one way a user's password is set: the
 * password rules apply, the must-change flag is cleared, the user's other sessions end); then what
 * the pending sign-in had proven, as `takeProven` returns it.
 */
export async function setNewPassword(
  app: AppContext,
  p: Pending,
  password: string,
  origin: BrowserOrigin,
): Promise<Proven | null> {
  if (p.row.stage !== "password") throw new AuthenticationFailed();
  await setPassword(app, p.user, password, selfActor(p.user, origin), "user.password.change");
  return takeProven(app, p, p.row.amr);
}

/** Ends the pending sign-in (single use) and returns what was proven, or null when it was already spent. */
export async function takeProven(app: AppContext, p: Pending, amr: string[] | null): Promise<Proven | null> {
  const [row] = await app.db.delete(pendingSignIns).where(eq(pendingSignIns.handleHash, p.row.handleHash)).returning();
  if (!row) return null;
  const used = amr ?? (row.stage === "enrolled" ? row.amr : null);
  if (!used) return null;
  return {
    proven: { userUuid: row.userUuid, login: row.login, method: row.method, backendName: row.backendName },
    amr: used,
    stepHash: row.handleHash,
  };
}

/**
 * Passwordless (WebAuthn §6.2.3 user verification required): the passkey's user, when its tenant
 * allows it (`passwordless` in the tenant MFA policy) and it has a username to log in as; else the
 * generic failure, counted per address like a wrong password. Never toward the account's
 * second-factor lock: a passkey that does not verify identifies nobody (counting it against the
 * credential's owner would let anyone lock a stranger), and one that does but that the tenant's
 * policy refuses is the user's own key, not a guess.
 */
export async function passwordlessProof(
  app: AppContext,
  rp: RelyingParty,
  challengeId: string,
  credential: unknown,
  origin: BrowserOrigin,
): Promise<Proven> {
  const subject = { action: "login" as const, login: null, remoteAddr: origin.remoteAddr, forwarded: origin.forwarded };
  await assertNotThrottled(app, subject, "tokens");
  const ok = await verifyPasskeyAssertion(app, rp, challengeId, credential, null);
  const [user] = ok ? await app.db.select().from(users).where(eq(users.uuid, ok.userUuid)) : [];
  if (!ok || !user?.username || !(await tenantAllowsPasswordless(app, user.tenantUuid))) {
    await inTransaction(app, (tx) => countFailure(app, tx, subject));
    throw new AuthenticationFailed();
  }
  // RFC 8176 §2: proof of possession of a key, and the authenticator's user verification (the second factor).
  return {
    proven: { userUuid: user.uuid, login: user.username, method: "native", backendName: "wazo_user" },
    amr: [ok.amr, "mfa"],
  };
}

/** Expired pending sign-ins (the cleanup job, jobs.ts): they can no longer be finished. */
export async function purgeExpiredPendingSignIns(app: AppContext): Promise<number> {
  const gone = await app.db
    .delete(pendingSignIns)
    .where(lt(pendingSignIns.expiresAt, new Date()))
    .returning({ handle: pendingSignIns.handleHash });
  return gone.length;
}
