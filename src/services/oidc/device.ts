// The device authorization grant (RFC 8628): a device without a usable browser gets a device code
// to poll with and a short user code that a person types on the verification page, where they sign
// in exactly as on the login page (POST /0.1/token's login), or continue as the user of the
// browser's session (single sign-on). The token the sign-in issues waits in the request until the
// device collects it, once (grants/device-code.ts, the token endpoint's grant).
import { randomBytes, randomInt } from "node:crypto";
import { and, eq, gt, lt } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { oidcClients, oidcDeviceCodes } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { revokeSessions, sessionByUuid } from "../auth/sessions.ts";
import type { ClientRow } from "./clients.ts";
import { type Form, hashToken, requestedScope } from "./grants.ts";
import { OAuthError } from "./oauth-error.ts";
import type { BrowserSessionRow } from "./browser-session.ts";
import { type BrowserOrigin, type Credentials, discardSignIn, passwordSignIn, sessionSignIn } from "./sign-in.ts";

export const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

/**
 * RFC 8628 §6.1: its 20 consonants (no vowels, so no words; no digits, so no 0/O or 1/I), 8 of
 * them: 20^8 ≈ 2^34.6 codes, guessed only at the login throttle's pace (a wrong code counts as a
 * failed login from the address) within the code's few minutes.
 */
const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
const USER_CODE_LENGTH = 8;

/** The code as typed (any case, with or without the dash or spaces), or null when it cannot be one. */
export function normaliseUserCode(input: string): string | null {
  const code = input.toUpperCase().replace(/[\s-]/g, "");
  if (code.length !== USER_CODE_LENGTH) return null;
  for (const ch of code) if (!USER_CODE_ALPHABET.includes(ch)) return null;
  return code;
}

export const formatUserCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

function newUserCode(): string {
  let code = "";
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

export interface DeviceAuthorizationResponse {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** RFC 8628 §3.1–3.2: the device authorization request of an authenticated client. */
export async function startDeviceAuthorization(
  app: AppContext,
  client: ClientRow,
  form: Form,
  issuer: string,
): Promise<DeviceAuthorizationResponse> {
  if (!client.grantTypes.includes(DEVICE_GRANT))
    throw new OAuthError(400, "unauthorized_client", "this client may not use the device authorization grant");
  const scope = requestedScope(client, form.scope, client.scopes.includes("openid") ? ["openid"] : []);
  const { device_code_lifetime: lifetime, device_poll_interval: interval } = app.config.oidc;
  const deviceCode = randomBytes(32).toString("base64url");
  // A user code drawn twice among the pending ones (≈ never) is drawn again.
  for (let attempt = 0; ; attempt++) {
    const userCode = newUserCode();
    const inserted = await app.db
      .insert(oidcDeviceCodes)
      .values({
        deviceCodeHash: hashToken(deviceCode),
        userCode,
        clientId: client.clientId,
        scope: scope.join(" "),
        interval,
        expiresAt: new Date(Date.now() + lifetime * 1000),
      })
      .onConflictDoNothing()
      .returning({ userCode: oidcDeviceCodes.userCode });
    if (inserted.length === 0 && attempt < 5) continue;
    if (inserted.length === 0) throw new OAuthError(503, "temporarily_unavailable", "try again later");
    const verification = `${issuer}/device`;
    return {
      device_code: deviceCode,
      user_code: formatUserCode(userCode),
      verification_uri: verification,
      verification_uri_complete: `${verification}?user_code=${formatUserCode(userCode)}`,
      expires_in: lifetime,
      interval,
    };
  }
}

/** A pending, unexpired request by its user code, with its client (for the verification page). */
export async function pendingRequest(
  app: AppContext,
  userCode: string,
): Promise<{ client: ClientRow; scope: string[]; userCode: string } | null> {
  const [row] = await app.db
    .select({ request: oidcDeviceCodes, client: oidcClients })
    .from(oidcDeviceCodes)
    .innerJoin(oidcClients, eq(oidcClients.clientId, oidcDeviceCodes.clientId))
    .where(
      and(
        eq(oidcDeviceCodes.userCode, userCode),
        eq(oidcDeviceCodes.status, "pending"),
        gt(oidcDeviceCodes.expiresAt, new Date()),
      ),
    );
  return row ? { client: row.client, scope: row.request.scope.split(" ").filter(Boolean), userCode } : null;
}

/** How the person on the verification page signs in: the password form, or the browser's session (single sign-on). */
export type DeviceSignIn =
  | { kind: "password"; creds: Credentials }
  | { kind: "session"; session: BrowserSessionRow; origin: BrowserOrigin };

/**
 * The person allows the device (RFC 8628 §3.3): signed in for the request's client, the token is
 * issued and kept for the device. False when the request is no longer pending (then nothing is kept).
 * The device's tokens are its own grant, not the browser session's: signing out of the browser
 * (RP-initiated logout) does not disconnect the device.
 */
export async function approveDevice(app: AppContext, userCode: string, how: DeviceSignIn): Promise<boolean> {
  const request = await pendingRequest(app, userCode);
  if (!request) return false;
  // OIDC Core §2 auth_time and RFC 8176 §2 amr: those of the real authentication — the password
  // (with `otp mfa` when a code came with it), or the browser session's own factors.
  const { signedIn, authTime, amr } =
    how.kind === "password"
      ? await passwordSignIn(app, request.client, request.scope, how.creds).then((s) => ({
          signedIn: s,
          authTime: Math.floor(Date.now() / 1000),
          amr: s.amr,
        }))
      : {
          signedIn: await sessionSignIn(app, request.client, request.scope, how.session, how.origin),
          authTime: how.session.authTime,
          amr: how.session.amr,
        };
  try {
    const updated = await app.db
      .update(oidcDeviceCodes)
      .set({
        status: "approved",
        userUuid: signedIn.userUuid,
        tokenUuid: signedIn.tokenUuid,
        sessionUuid: signedIn.sessionUuid,
        authTime,
        amr,
      })
      .where(
        and(
          eq(oidcDeviceCodes.userCode, userCode),
          eq(oidcDeviceCodes.status, "pending"),
          gt(oidcDeviceCodes.expiresAt, new Date()),
        ),
      )
      .returning({ userCode: oidcDeviceCodes.userCode });
    if (updated.length === 0) {
      await discardSignIn(app, signedIn, "device request no longer pending");
      return false;
    }
    return true;
  } catch (e) {
    await discardSignIn(app, signedIn, "device approval failed").catch(() => undefined);
    throw e;
  }
}

/** The person refuses (RFC 8628 §3.5 `access_denied` for the device). False when no longer pending. */
export async function denyDevice(app: AppContext, userCode: string): Promise<boolean> {
  const updated = await app.db
    .update(oidcDeviceCodes)
    .set({ status: "denied" })
    .where(
      and(
        eq(oidcDeviceCodes.userCode, userCode),
        eq(oidcDeviceCodes.status, "pending"),
        gt(oidcDeviceCodes.expiresAt, new Date()),
      ),
    )
    .returning({ userCode: oidcDeviceCodes.userCode });
  return updated.length > 0;
}

/** Expired requests go (with an approval never collected): called by the periodic clean-up. */
export async function purgeExpiredDeviceCodes(app: AppContext): Promise<number> {
  const gone = await app.db
    .delete(oidcDeviceCodes)
    .where(lt(oidcDeviceCodes.expiresAt, new Date(Date.now() - 60_000)))
    .returning({ sessionUuid: oidcDeviceCodes.sessionUuid, status: oidcDeviceCodes.status });
  const uncollected = gone.filter((g) => g.status === "approved" && g.sessionUuid).map((g) => g.sessionUuid!);
  for (const s of uncollected) await inTransaction(app, (tx) => revokeSessions(app, tx, sessionByUuid(s)));
  return gone.length;
}
