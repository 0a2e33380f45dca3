// The ID token (OIDC Core §2, §3.1.3.6), signed with the current key of the client's algorithm,
// kept in memory (no database read, no key import per token).
import { createHash } from "node:crypto";
import type { AppContext } from "../../boot/context.ts";
import type { ClientRow } from "./clients.ts";
import { signingKey, type SigningAlg } from "./keys.ts";

export const DEFAULT_ID_TOKEN_LIFETIME = 3_600;

/** OIDC Core §3.1.3.6: left half of the SHA-256 of the access token (both ES256 and RS256 use SHA-256). */
export function atHash(accessToken: string): string {
  const digest = createHash("sha256").update(accessToken).digest();
  return digest.subarray(0, digest.length / 2).toString("base64url");
}

export interface IdTokenInput {
  issuer: string;
  client: ClientRow;
  claims: Record<string, unknown> & { sub: string };
  authTime: number;
  nonce: string | null;
  amr: string[];
  accessToken: string;
  /**
   * The browser session the user signed in through (OpenID Connect Front-Channel Logout 1.0 §3,
   * RP-Initiated Logout §2): its public id, never the cookie. None for tokens not issued through
   * one (device flow, refresh).
   */
  sid?: string | null;
}

export async function signIdToken(app: AppContext, t: IdTokenInput): Promise<string> {
  const alg = t.client.idTokenSignedResponseAlg as SigningAlg;
  const key = await signingKey(app, alg);
  const { SignJWT } = await import("jose"); // loaded at the first ID token, not at every start
  const now = Math.floor(Date.now() / 1000);
  const payload: Record<string, unknown> = {
    ...t.claims,
    auth_time: t.authTime,
    amr: t.amr,
    at_hash: atHash(t.accessToken),
  };
  if (t.nonce !== null) payload.nonce = t.nonce;
  if (t.sid) payload.sid = t.sid;
  return new SignJWT(payload)
    .setProtectedHeader({ alg, kid: key.kid, typ: "JWT" })
    .setIssuer(t.issuer)
    .setSubject(t.claims.sub)
    .setAudience(t.client.clientId)
    .setIssuedAt(now)
    .setExpirationTime(now + (t.client.idTokenLifetime ?? DEFAULT_ID_TOKEN_LIFETIME))
    .sign(key.privateKey);
}
