// RFC 6749 §4.1.3 and OIDC Core §3.1.3: a code from the authorization endpoint, with its PKCE
// verifier (RFC 7636 §4.5), for the tokens of the user who signed in. The access token is the
// Tessera token the sign-in issued.
import { createHash } from "node:crypto";
import { and, eq, isNull } from "drizzle-orm";
import type { AppContext } from "../../../boot/context.ts";
import { oidcCodes, refreshTokens, tokens } from "../../../db/schema.ts";
import { inTransaction } from "../../../db/tx.ts";
import { type AuditActor, recordAudit } from "../../audit/record.ts";
import { revokeSessions, sessionByUuid } from "../../auth/sessions.ts";
import { recordBrowserSessionClient } from "../browser-session.ts";
import { userClaims } from "../claims.ts";
import type { ClientRow } from "../clients.ts";
import {
  clientActor,
  endFamily,
  type Form,
  mintRefreshToken,
  offlineGranted,
  recordAccessToken,
  type RequestOrigin,
  type TokenResponse,
} from "../grants.ts";
import { signIdToken } from "../id-token.ts";
import { invalidGrant } from "../oauth-error.ts";
import { hashCode } from "../sign-in.ts";
import type { Grant } from "./grant.ts";

export const authorizationCodeGrant: Grant<"authorization_code"> = {
  type: "authorization_code",
  parameters: ["code", "redirect_uri", "code_verifier"],
  handle: (app, client, form, { issuer, origin }) => exchangeAuthorizationCode(app, client, form, issuer, origin),
  authorizedResource: async (app, client, form) => {
    if (!form.code) return null;
    const [grant] = await app.db
      .select({ clientId: oidcCodes.clientId, resource: oidcCodes.resource })
      .from(oidcCodes)
      .where(eq(oidcCodes.codeHash, hashCode(form.code)));
    // Another client's code tells nothing (the grant refuses it, spending nothing of its owner's).
    return grant && grant.clientId === client.clientId ? grant.resource : null;
  },
};

/** RFC 7636 §4.6: BASE64URL(SHA256(ASCII(code_verifier))) == code_challenge; §4.1 verifier syntax. */
function pkceMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  return createHash("sha256").update(verifier).digest("base64url") === challenge;
}

/** RFC 6749 §4.1.3 and OIDC Core §3.1.3.2: the code's checks, in the order that leaks nothing. */
export async function exchangeAuthorizationCode(
  app: AppContext,
  client: ClientRow,
  form: Form,
  issuer: string,
  origin: RequestOrigin,
): Promise<TokenResponse> {
  const code = form.code ?? "";
  const [grant] = code
    ? await app.db
        .select()
        .from(oidcCodes)
        .where(eq(oidcCodes.codeHash, hashCode(code)))
    : [];
  if (!grant) throw invalidGrant("the code is invalid, expired or already used");
  // A code of another client is invalid for this one (§4.1.3), and spends nothing of its owner's.
  if (grant.clientId !== client.clientId) throw invalidGrant("the code was issued to another client");
  if (grant.usedAt !== null) {
    await revokeReplayed(app, grant, client, clientActor(origin, client.tenantUuid));
    throw invalidGrant("the code is invalid, expired or already used");
  }
  if (grant.expiresAt.getTime() < Date.now()) throw invalidGrant("the code is invalid, expired or already used");
  if (form.redirect_uri !== grant.redirectUri)
    throw invalidGrant("redirect_uri does not match the authorization request");
  const verifier = form.code_verifier;
  if (grant.codeChallenge !== null) {
    if (verifier === undefined || !pkceMatches(verifier, grant.codeChallenge))
      throw invalidGrant("the code_verifier does not match the code_challenge");
  } else if (verifier !== undefined) {
    // RFC 9700 §2.1.1: a verifier for a code issued without a challenge is a downgrade attempt.
    throw invalidGrant("no code_challenge was sent with the authorization request");
  }
  const [token] = await app.db
    .select({ expireT: tokens.expireT, familyUuid: tokens.refreshTokenUuid })
    .from(tokens)
    .where(eq(tokens.uuid, grant.tokenUuid));
  const scope = grant.scope.split(" ");
  const claims = await userClaims(app, grant.userUuid, scope);
  if (!token || !claims) throw invalidGrant("the grant was revoked");
  // Spend it: of two concurrent exchanges only one wins; the other is a replay (§10.5). The token's
  // record and its refresh token (OIDC Core §11) are written with it, or nothing is.
  const refreshToken = await inTransaction(app, async (tx) => {
    const spent = await tx
      .update(oidcCodes)
      .set({ usedAt: new Date() })
      .where(and(eq(oidcCodes.codeHash, grant.codeHash), isNull(oidcCodes.usedAt)))
      .returning({ codeHash: oidcCodes.codeHash });
    if (spent.length === 0) return false;
    await recordAccessToken(tx, {
      tokenUuid: grant.tokenUuid,
      sessionUuid: grant.sessionUuid,
      clientId: client.clientId,
      userUuid: grant.userUuid,
      grantType: "authorization_code",
      scope,
    });
    // The browser session gave this client tokens: its end tells the client (back-channel logout).
    if (grant.browserSessionId) await recordBrowserSessionClient(tx, grant.browserSessionId, client.clientId);
    if (!offlineGranted(client, scope) || !token.familyUuid) return null;
    return mintRefreshToken(app, tx, {
      ...grant,
      familyUuid: token.familyUuid,
      client,
      scope,
      sid: grant.browserSessionId,
    });
  });
  if (refreshToken === false) {
    await revokeReplayed(app, grant, client, clientActor(origin, client.tenantUuid));
    throw invalidGrant("the code is invalid, expired or already used");
  }
  const idToken = await signIdToken(app, {
    issuer,
    client,
    claims: claims as Record<string, unknown> & { sub: string },
    authTime: grant.authTime,
    nonce: grant.nonce,
    amr: grant.amr,
    accessToken: grant.tokenUuid,
    sid: grant.browserSessionId,
  });
  return {
    access_token: grant.tokenUuid,
    token_type: "Bearer",
    expires_in: Math.max(0, token.expireT - Math.floor(Date.now() / 1000)),
    id_token: idToken,
    scope: grant.scope,
    ...(refreshToken ? { refresh_token: refreshToken } : {}),
  };
}

/**
 * RFC 6749 §4.1.2 and §10.5: a code used twice revokes the tokens issued from it — its session goes
 * (with its events), and so does the refresh token family the first exchange gave a refresh token
 * of (the user's family with this client, as reuse detection ends it: OIDC Core §11) — recorded as
 * the client's act with the reason.
 */
async function revokeReplayed(
  app: AppContext,
  grant: { sessionUuid: string; userUuid: string; clientId: string; scope: string },
  client: ClientRow,
  actor: AuditActor,
): Promise<void> {
  const { sessionUuid } = grant;
  const reason = "authorization code replayed";
  await inTransaction(app, async (tx) => {
    const revoked = await revokeSessions(app, tx, sessionByUuid(sessionUuid));
    for (const session of revoked)
      await recordAudit(app, tx, actor, {
        action: "token.revoke",
        target: { kind: "session", uuid: session.uuid, tenantUuid: session.tenantUuid },
        changes: [
          { field: "client_id", old: null, new: grant.clientId },
          { field: "reason", old: null, new: reason },
        ],
      });
    // The code's sign-in and its exchange use the one family of (user, client) (sign-in.ts): found
    // by those, not through the session's token, which an earlier replay or a logout may have ended.
    const family = offlineGranted(client, grant.scope.split(" "))
      ? await endFamily(
          app,
          tx,
          and(eq(refreshTokens.userUuid, grant.userUuid), eq(refreshTokens.clientId, grant.clientId))!,
          reason,
          actor,
        )
      : 0;
    app.log.warn("OIDC authorization code replayed: its session and refresh tokens were revoked", {
      session_uuid: sessionUuid,
      revoked: revoked.length,
      family_sessions_revoked: family,
    });
  });
}
