// The login behind an authorization code: exactly POST /0.1/token's login (same identity
// providers and backends, throttling, generic failure, disabled users and authentication-method
// rules), whose token becomes the code's access token. The code is returned once and stored hashed.
import { createHash, randomBytes } from "node:crypto";
import type { AppContext } from "../../context.ts";
import { oidcCodes } from "../../db/schema.ts";
import { AuthenticationFailed } from "../../domain/errors.ts";
import { isUuid } from "../../domain/validate.ts";
import { login } from "../auth/authentication.ts";
import { revokeToken } from "../auth/sessions.ts";
import { isSubtenant } from "../identity/tenant-tree.ts";
import type { AuthorizationRequest } from "./authorize.ts";
import type { ClientRow } from "./clients.ts";

/** RFC 6749 §4.1.2: short-lived (10 minutes at most is recommended; one is plenty for a redirect). */
export const CODE_LIFETIME_SECONDS = 60;

export const hashCode = (code: string) => createHash("sha256").update(code).digest("hex");

export interface Credentials {
  login: string;
  password: string;
  userAgent: string;
  remoteAddr: string;
  /** The address came through a trusted proxy (POST /0.1/token's throttling counts it so too). */
  forwarded: boolean;
  headers: Record<string, string>;
}

/** Signs the user in and returns a fresh authorization code; throws AuthenticationFailed (401), 429 or 503 as the login does. */
export async function signInForCode(
  app: AppContext,
  client: ClientRow,
  request: AuthorizationRequest,
  creds: Credentials,
): Promise<string> {
  const { token } = await login(app, {
    login: creds.login,
    password: creds.password,
    body: { expiration: client.accessTokenLifetime ?? app.config.default_token_lifetime },
    mobile: false,
    userAgent: creds.userAgent,
    remoteAddr: creds.remoteAddr,
    forwarded: creds.forwarded,
    headers: creds.headers,
  });
  const tenantUuid = typeof token.metadata.tenant_uuid === "string" ? token.metadata.tenant_uuid : "";
  // A client signs in only users of its own tenant and its sub-tenants (and only users: the
  // `sub` of an ID token is a user uuid, OIDC Core §2). Anyone else gets the generic failure.
  if (!isUuid(token.auth_id) || !(await isSubtenant(app.db, tenantUuid, client.tenantUuid, app.topTenantUuid))) {
    await revokeToken(app, token.token);
    throw new AuthenticationFailed();
  }
  const code = randomBytes(32).toString("base64url");
  await app.db.insert(oidcCodes).values({
    codeHash: hashCode(code),
    clientId: client.clientId,
    userUuid: token.auth_id,
    tokenUuid: token.token,
    sessionUuid: token.session_uuid,
    redirectUri: request.redirectUri,
    scope: request.scope.join(" "),
    nonce: request.nonce,
    codeChallenge: request.codeChallenge,
    authTime: Math.floor(Date.now() / 1000),
    // RFC 8176 §2: a password was used (the MFA issue adds its factors here).
    amr: ["pwd"],
    expiresAt: new Date(Date.now() + CODE_LIFETIME_SECONDS * 1000),
  });
  return code;
}
