// The device authorization grant (RFC 8628): a device without a usable browser gets a device code
// to poll with and a short user code that a person types on the verification page, where they sign
// in exactly as on the login page (POST /0.1/token's login), or continue as the user of the
// browser's session (single sign-on). The token the sign-in issues waits in the request until the
// device collects it, once.
import { randomBytes, randomInt } from "node:crypto";
import { and, eq, gt, lt } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { oidcClients, oidcDeviceCodes, tokens } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { revokeSessions, sessionByUuid } from "../auth/sessions.ts";
import { userClaims } from "./claims.ts";
import type { ClientRow } from "./clients.ts";
import {
  type Form,
  hashToken,
  mintRefreshToken,
  offlineGranted,
  recordAccessToken,
  requestedScope,
  type TokenResponse,
} from "./grants.ts";
import { signIdToken } from "./id-token.ts";
import { invalidGrant, OAuthError } from "./oauth-error.ts";
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
/** RFC 8628 §3.5: each `slow_down` adds 5 seconds to the interval. */
const SLOW_DOWN_SECONDS = 5;

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

const deviceError = (error: string, description: string) => new OAuthError(400, error, description);

/** RFC 8628 §3.4–3.5: the device polls the token endpoint with its device code. */
export async function pollDeviceCode(
  app: AppContext,
  client: ClientRow,
  form: Form,
  issuer: string,
): Promise<TokenResponse> {
  const presented = form.device_code ?? "";
  const [row] =
    presented && presented.length <= 256
      ? await app.db
          .select()
          .from(oidcDeviceCodes)
          .where(eq(oidcDeviceCodes.deviceCodeHash, hashToken(presented)))
      : [];
  if (!row || row.status === "collected") throw invalidGrant("the device code is invalid or already used");
  if (row.clientId !== client.clientId) throw invalidGrant("the device code was issued to another client");
  const now = new Date();
  if (row.expiresAt.getTime() <= now.getTime()) {
    // An approval the device never collected goes with its code.
    if (row.sessionUuid) await inTransaction(app, (tx) => revokeSessions(app, tx, sessionByUuid(row.sessionUuid!)));
    throw deviceError("expired_token", "the device code has expired; start again");
  }
  if (row.status === "denied") throw deviceError("access_denied", "the user denied the request");
  if (row.status === "pending") {
    // §3.5: polling faster than the interval is answered slow_down, and the interval grows.
    const early = row.lastPolledAt !== null && now.getTime() - row.lastPolledAt.getTime() < row.interval * 1000;
    await app.db
      .update(oidcDeviceCodes)
      .set({ lastPolledAt: now, ...(early ? { interval: row.interval + SLOW_DOWN_SECONDS } : {}) })
      .where(eq(oidcDeviceCodes.deviceCodeHash, row.deviceCodeHash));
    if (early) throw deviceError("slow_down", `poll at most every ${row.interval + SLOW_DOWN_SECONDS} seconds`);
    throw deviceError("authorization_pending", "the user has not answered yet");
  }
  return collect(app, client, row, issuer);
}

type DeviceRow = typeof oidcDeviceCodes.$inferSelect;

async function collect(app: AppContext, client: ClientRow, row: DeviceRow, issuer: string): Promise<TokenResponse> {
  const scope = row.scope.split(" ").filter(Boolean);
  const [token] = row.tokenUuid
    ? await app.db
        .select({ expireT: tokens.expireT, familyUuid: tokens.refreshTokenUuid })
        .from(tokens)
        .where(and(eq(tokens.uuid, row.tokenUuid), gt(tokens.expireT, Math.floor(Date.now() / 1000))))
    : [];
  const claims = row.userUuid ? await userClaims(app, row.userUuid, scope) : null;
  if (!token || !claims || !row.userUuid || !row.tokenUuid || !row.sessionUuid || row.authTime === null)
    throw invalidGrant("the grant was revoked");
  const { userUuid, tokenUuid, sessionUuid, authTime } = row;
  const amr = row.amr ?? ["pwd"];
  const refreshToken = await inTransaction(app, async (tx) => {
    const taken = await tx
      .update(oidcDeviceCodes)
      .set({ status: "collected" })
      .where(and(eq(oidcDeviceCodes.deviceCodeHash, row.deviceCodeHash), eq(oidcDeviceCodes.status, "approved")))
      .returning({ h: oidcDeviceCodes.deviceCodeHash });
    if (taken.length === 0) return false;
    await recordAccessToken(tx, {
      tokenUuid,
      sessionUuid,
      clientId: client.clientId,
      userUuid,
      grantType: DEVICE_GRANT,
      scope,
    });
    if (!offlineGranted(client, scope) || !token.familyUuid) return null;
    return mintRefreshToken(app, tx, { familyUuid: token.familyUuid, client, userUuid, scope, authTime, amr });
  });
  if (refreshToken === false) throw invalidGrant("the device code is invalid or already used");
  const answer: TokenResponse = {
    access_token: tokenUuid,
    token_type: "Bearer",
    expires_in: Math.max(0, token.expireT - Math.floor(Date.now() / 1000)),
    scope: scope.join(" "),
  };
  if (refreshToken) answer.refresh_token = refreshToken;
  if (scope.includes("openid"))
    answer.id_token = await signIdToken(app, {
      issuer,
      client,
      claims: claims as Record<string, unknown> & { sub: string },
      authTime,
      nonce: null,
      amr,
      accessToken: tokenUuid,
    });
  return answer;
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
