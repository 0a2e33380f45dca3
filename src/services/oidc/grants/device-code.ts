// RFC 8628 §3.4: the device polls with its device code until the user approved it on the
// verification page (web/device.ts), denied it, or it expired; then it collects the tokens once.
import { and, eq, gt } from "drizzle-orm";
import type { AppContext } from "../../../boot/context.ts";
import { oidcDeviceCodes, tokens } from "../../../db/schema.ts";
import { inTransaction } from "../../../db/tx.ts";
import { revokeSessions, sessionByUuid } from "../../auth/sessions.ts";
import { userClaims } from "../claims.ts";
import type { ClientRow } from "../clients.ts";
import { DEVICE_GRANT } from "../device.ts";
import {
  type Form,
  hashToken,
  mintRefreshToken,
  offlineGranted,
  recordAccessToken,
  type TokenResponse,
} from "../grants.ts";
import { signIdToken } from "../id-token.ts";
import { invalidGrant, OAuthError } from "../oauth-error.ts";
import type { Grant } from "./grant.ts";

export const deviceCodeGrant: Grant<typeof DEVICE_GRANT> = {
  type: DEVICE_GRANT,
  parameters: ["device_code"],
  handle: (app, client, form, { issuer }) => pollDeviceCode(app, client, form, issuer),
};

/** RFC 8628 §3.5: each `slow_down` adds 5 seconds to the interval. */
const SLOW_DOWN_SECONDS = 5;

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
    return mintRefreshToken(app, tx, {
      familyUuid: token.familyUuid,
      client,
      userUuid,
      scope,
      authTime,
      amr,
      sessionUuid,
      sid: null,
    });
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
