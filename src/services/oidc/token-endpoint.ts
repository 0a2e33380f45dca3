// The token endpoint (RFC 6749 §3.2, OIDC Core §3.1.3): client authentication, then the
// authorization code grant with PKCE. The access token is the Tessera token the login issued.
import { createHash } from "node:crypto";
import { and, eq, isNull } from "drizzle-orm";
import type { AppContext } from "../../context.ts";
import { oidcClients, oidcCodes, tokens } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { isUuid } from "../../domain/validate.ts";
import { base64url } from "jose";
import { revokeSessions, sessionByUuid } from "../auth/sessions.ts";
import { userClaims } from "./claims.ts";
import { clientSecretMatches, type ClientRow } from "./clients.ts";
import { signIdToken } from "./id-token.ts";
import { invalidClient, invalidGrant, OAuthError } from "./oauth-error.ts";
import { hashCode } from "./sign-in.ts";

export type Form = Record<string, string | undefined>;

/** RFC 6749 §2.3.1: Basic credentials are form-urlencoded before base64. */
function basicClient(header: string | undefined): { id: string; secret: string } | null {
  if (!header || !/^basic\s+/i.test(header)) return null;
  const decoded = Buffer.from(header.replace(/^basic\s+/i, "").trim(), "base64").toString("utf8");
  const i = decoded.indexOf(":");
  if (i < 0) return null;
  try {
    return {
      id: decodeURIComponent(decoded.slice(0, i).replaceAll("+", " ")),
      secret: decodeURIComponent(decoded.slice(i + 1).replaceAll("+", " ")),
    };
  } catch {
    return null;
  }
}

/**
 * The calling client (RFC 6749 §2.3): `client_secret_basic` or `client_secret_post` for a
 * confidential client, `client_id` alone for a public one. One method per request (§2.3).
 */
export async function authenticateClient(
  app: AppContext,
  authorization: string | undefined,
  form: Form,
): Promise<ClientRow> {
  const basic = basicClient(authorization);
  if (basic && form.client_secret !== undefined)
    throw new OAuthError(400, "invalid_request", "use one client authentication method");
  if (basic && form.client_id !== undefined && form.client_id !== basic.id)
    throw new OAuthError(400, "invalid_request", "client_id does not match the credentials");
  const id = basic?.id ?? form.client_id ?? "";
  const secret = basic?.secret ?? form.client_secret;
  const [client] = isUuid(id)
    ? await app.db.select().from(oidcClients).where(eq(oidcClients.clientId, id.toLowerCase()))
    : [];
  if (!client) throw invalidClient();
  if (client.clientType === "confidential") {
    if (secret === undefined || !clientSecretMatches(client, secret)) throw invalidClient();
  } else if (secret !== undefined && secret !== "") {
    throw invalidClient(); // a public client has no secret to present
  }
  return client;
}

export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  id_token: string;
  scope: string;
}

/** RFC 7636 §4.6: BASE64URL(SHA256(ASCII(code_verifier))) == code_challenge; §4.1 verifier syntax. */
function pkceMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  return base64url.encode(createHash("sha256").update(verifier).digest()) === challenge;
}

/** RFC 6749 §4.1.3 and OIDC Core §3.1.3.2: the code's checks, in the order that leaks nothing. */
export async function exchangeAuthorizationCode(
  app: AppContext,
  client: ClientRow,
  form: Form,
  issuer: string,
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
    await revokeReplayed(app, grant.sessionUuid);
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
  // Spend it: of two concurrent exchanges only one wins; the other is a replay (§10.5).
  const spent = await app.db
    .update(oidcCodes)
    .set({ usedAt: new Date() })
    .where(and(eq(oidcCodes.codeHash, grant.codeHash), isNull(oidcCodes.usedAt)))
    .returning({ codeHash: oidcCodes.codeHash });
  if (spent.length === 0) {
    await revokeReplayed(app, grant.sessionUuid);
    throw invalidGrant("the code is invalid, expired or already used");
  }
  const [token] = await app.db.select({ expireT: tokens.expireT }).from(tokens).where(eq(tokens.uuid, grant.tokenUuid));
  const scope = grant.scope.split(" ");
  const claims = await userClaims(app, grant.userUuid, scope);
  if (!token || !claims) throw invalidGrant("the grant was revoked");
  const idToken = await signIdToken(app, {
    issuer,
    client,
    claims: claims as Record<string, unknown> & { sub: string },
    authTime: grant.authTime,
    nonce: grant.nonce,
    amr: grant.amr,
    accessToken: grant.tokenUuid,
  });
  return {
    access_token: grant.tokenUuid,
    token_type: "Bearer",
    expires_in: Math.max(0, token.expireT - Math.floor(Date.now() / 1000)),
    id_token: idToken,
    scope: grant.scope,
  };
}

/** RFC 6749 §4.1.2: a code used twice revokes the tokens issued from it (the session goes, with its events). */
async function revokeReplayed(app: AppContext, sessionUuid: string): Promise<void> {
  await inTransaction(app, async (tx) => {
    const revoked = await revokeSessions(app, tx, sessionByUuid(sessionUuid));
    app.log.warn("OIDC authorization code replayed: its session was revoked", {
      session_uuid: sessionUuid,
      revoked: revoked.length,
    });
  });
}
