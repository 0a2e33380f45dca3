// The logins behind an authorization code, each exactly a login of POST /0.1/token (same identity
// providers and backends, throttling, generic failure, disabled users and authentication-method
// rules), whose token becomes the code's access token:
//   - the password form (native and LDAP users),
//   - the SAML flow (users whose method is `saml`: POST /0.1/token's `saml_session_id` login),
//   - the browser session (single sign-on: a login without password, as a refresh token's),
//   - a password whose second factor the login page's second step then proved, or a passkey alone
//     (passwordless): services/oidc/mfa-sign-in.ts.
// A client signs in only users of its own tenant and sub-tenants. The code is returned once and
// stored hashed, with the GRANTED scope (consent.ts) for the token endpoint to read.
import { createHash, randomBytes } from "node:crypto";
import { and, eq } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { emails, oidcCodes, users } from "../../db/schema.ts";
import { AuthenticationFailed, type ProvenPassword } from "../../domain/errors.ts";
import { isUuid } from "../../domain/validate.ts";
import { completeProvenLogin, login, loginAuthenticatedUser, type LoginResult } from "../auth/authentication.ts";
import { aclNarrowing } from "./acl-scope.ts";
import { familyHandedOut, revokeFamily } from "./grants.ts";
import { revokeToken } from "../auth/sessions.ts";
import { isSubtenant } from "../identity/tenant-tree.ts";
import { metUpstream, UPSTREAM_MFA_AMR } from "../integrations/upstream-oidc/amr.ts";
import type { AuthorizationRequest } from "./authorize.ts";
import type { BrowserSessionRow } from "./browser-session.ts";
import type { ClientRow } from "./clients.ts";

/** RFC 6749 §4.1.2: short-lived (10 minutes at most is recommended; one is plenty for a redirect). */
export const CODE_LIFETIME_SECONDS = 60;

export const hashCode = (code: string) => createHash("sha256").update(code).digest("hex");

/** Where the browser's request came from (POST /0.1/token's throttling counts it so too). */
export interface BrowserOrigin {
  userAgent: string;
  remoteAddr: string;
  /** The address came through a trusted proxy. */
  forwarded: boolean;
}

export interface Credentials extends BrowserOrigin {
  login: string;
  password: string;
  /** A TOTP or recovery code given with the password (the device page's second step). */
  mfaCode?: string;
}

/** A token issued for the user, not yet handed to anyone: it becomes a code's access token, or is revoked. */
export interface SignedIn {
  tokenUuid: string;
  sessionUuid: string;
  userUuid: string;
  /** The Tessera refresh token of the client's family, when `offline_access` was asked and may be used. */
  refreshToken: string | null;
}

/**
 * A sign-in that will not be handed out (refused, or awaiting consent): its token ends, and its
 * refresh token family unless the client already holds refresh tokens of it — there is one family
 * per user and client and the login hands back the existing one, so that family is the grant the
 * user gave earlier (OIDC Core §11), which neither a consent screen nor a refusal takes back.
 */
export async function discardSignIn(app: AppContext, signedIn: SignedIn, reason: string): Promise<void> {
  await revokeToken(app, signedIn.tokenUuid);
  if (signedIn.refreshToken && !(await familyHandedOut(app, signedIn.refreshToken)))
    await revokeFamily(app, signedIn.refreshToken, reason);
}

/** The token of a login, when its user may sign in to `client`; else revoked, and the generic failure. */
async function forClient(app: AppContext, client: ClientRow, result: LoginResult): Promise<SignedIn> {
  const { token } = result;
  const tenantUuid = typeof token.metadata.tenant_uuid === "string" ? token.metadata.tenant_uuid : "";
  // A client signs in only users of its own tenant and its sub-tenants (and only users: the
  // `sub` of an ID token is a user uuid, OIDC Core §2). Anyone else gets the generic failure.
  const signedIn = {
    tokenUuid: token.token,
    sessionUuid: token.session_uuid,
    userUuid: token.auth_id,
    refreshToken: token.refresh_token ?? null,
  };
  if (!isUuid(token.auth_id) || !(await isSubtenant(app.db, tenantUuid, client.tenantUuid, app.topTenantUuid))) {
    // …nor keeps a token or a refresh token family for anyone else.
    await discardSignIn(app, signedIn, "user outside the client's tenants");
    throw new AuthenticationFailed();
  }
  return signedIn;
}

/**
 * What every sign-in for a client asks of the login: the client's token lifetime, a refresh token
 * family when the client may refresh and `offline_access` is asked (OIDC Core §11), and the ACL
 * narrowed by the ACL scopes (acl-scope.ts). `scope` is what the code will grant: a sign-in made
 * before consent is discarded when consent is still missing (web/flow/authorization.ts).
 */
function loginOptions(app: AppContext, client: ClientRow, scope: string[]) {
  const offline = scope.includes("offline_access") && client.grantTypes.includes("refresh_token");
  return {
    body: {
      expiration: client.accessTokenLifetime ?? app.config.default_token_lifetime,
      ...(offline ? { access_type: "offline" as const, client_id: client.clientId } : {}),
    },
    narrowAcl: aclNarrowing(scope),
  };
}

/**
 * The password form. Throws AuthenticationFailed (401), 429 or 503 as the login does, and
 * MfaRequired (with `proven`) for a user with a second factor, or who must enrol one: the hosted
 * pages ask for it (web/flow/second-step.ts, the device page), never an enrol-only token. `amr` (RFC 8176
 * §2): the password, and a one-time code when one came with it (`mfaCode`, or appended to the password).
 */
export async function passwordSignIn(
  app: AppContext,
  client: ClientRow,
  scope: string[],
  creds: Credentials,
): Promise<SignedIn & { amr: string[] }> {
  const { body, narrowAcl } = loginOptions(app, client, scope);
  const result = await login(app, {
    login: creds.login,
    password: creds.password,
    body: creds.mfaCode ? { ...body, mfa_code: creds.mfaCode } : body,
    narrowAcl,
    mobile: false,
    userAgent: creds.userAgent,
    remoteAddr: creds.remoteAddr,
    forwarded: creds.forwarded,
    headers: {},
    interactive: true,
  });
  const signedIn = await forClient(app, client, result);
  return { ...signedIn, amr: result.codeAccepted ? ["pwd", "otp", "mfa"] : ["pwd"] };
}

/**
 * A sign-in whose factors the hosted login page's second step (or passwordless passkey sign-in)
 * has just proven (services/oidc/mfa-sign-in.ts): the token as the login would have issued it.
 */
export async function provenSignIn(
  app: AppContext,
  client: ClientRow,
  scope: string[],
  proven: ProvenPassword,
  origin: BrowserOrigin,
): Promise<SignedIn> {
  const { body, narrowAcl } = loginOptions(app, client, scope);
  const result = await completeProvenLogin(app, proven, { body, narrowAcl, ...origin, headers: {} });
  return forClient(app, client, result);
}

/**
 * Back from the tenant's SAML identity provider: the completed SAML login, once (plugins/idp/saml.ts).
 * Interactive as the password form is: a user with a second factor gets MfaRequired, and one who must
 * enrol (the tenant requires MFA) MfaRequired with `enrol`, never an enrol-only token. No password was
 * typed, so "must change the password" does not apply (services/auth/authentication.ts).
 */
export async function samlSignIn(
  app: AppContext,
  client: ClientRow,
  scope: string[],
  samlSessionId: string,
  origin: BrowserOrigin,
): Promise<SignedIn> {
  const { body, narrowAcl } = loginOptions(app, client, scope);
  const result = await login(app, {
    login: null,
    password: null,
    body: { ...body, saml_session_id: samlSessionId },
    narrowAcl,
    mobile: false,
    ...origin,
    headers: {},
    interactive: true,
  });
  return forClient(app, client, result);
}

/**
 * Back from a tenant's upstream OpenID Connect provider: the completed sign-in, once (plugins/idp/oidc.ts,
 * services/integrations/upstream-oidc/). A user with a second factor gets MfaRequired, as with a password,
 * unless the provider is trusted with its `amr` and it showed a multi-factor authentication. `amr`:
 * `oidc` (not an RFC 8176 value: "by the tenant's upstream OpenID provider"), plus `mfa` in that case.
 */
export async function upstreamSignIn(
  app: AppContext,
  client: ClientRow,
  scope: string[],
  completion: string,
  origin: BrowserOrigin,
): Promise<SignedIn & { amr: string[] }> {
  const { body, narrowAcl } = loginOptions(app, client, scope);
  const result = await login(app, {
    login: null,
    password: null,
    body: { ...body, upstream_login: completion },
    narrowAcl,
    mobile: false,
    ...origin,
    headers: {},
    interactive: true,
  });
  const signedIn = await forClient(app, client, result);
  return { ...signedIn, amr: result.upstreamMfa ? [...UPSTREAM_MFA_AMR] : ["oidc"] };
}

/** Single sign-on: a new token for the browser session's user, without asking anything. */
export async function sessionSignIn(
  app: AppContext,
  client: ClientRow,
  scope: string[],
  session: BrowserSessionRow,
  origin: BrowserOrigin,
): Promise<SignedIn> {
  const { body, narrowAcl } = loginOptions(app, client, scope);
  const result = await loginAuthenticatedUser(app, {
    login: session.login,
    userUuid: session.userUuid,
    body,
    narrowAcl,
    // Signed in through a provider trusted with its `amr`: the tenant's MFA requirement was met then.
    mfaMetUpstream: metUpstream(session.amr),
    ...origin,
    headers: {},
  });
  return forClient(app, client, result);
}

/** The name a later single sign-on logs the user in with: its username, else its confirmed main email. */
export async function loginNameOf(app: AppContext, userUuid: string): Promise<string | null> {
  const [row] = await app.db
    .select({ username: users.username, email: emails.address })
    .from(users)
    .leftJoin(emails, and(eq(emails.userUuid, users.uuid), eq(emails.main, true), eq(emails.confirmed, true)))
    .where(eq(users.uuid, userUuid));
  return row?.username ?? row?.email ?? null;
}

export interface Authentication {
  /** OIDC Core §2 `auth_time`: when the user really authenticated (not when the code was issued). */
  authTime: number;
  /** RFC 8176 §2 methods: `pwd` for the password form, plus `otp`/`hwk`/`swk` and `mfa` after a second factor. */
  amr: string[];
  browserSessionId: string | null;
}

/** A fresh authorization code for the signed-in token, with the scope the user granted. */
export async function issueCode(
  app: AppContext,
  client: ClientRow,
  request: AuthorizationRequest,
  signedIn: SignedIn,
  auth: Authentication,
  grantedScope: string[],
): Promise<string> {
  const code = randomBytes(32).toString("base64url");
  await app.db.insert(oidcCodes).values({
    codeHash: hashCode(code),
    clientId: client.clientId,
    userUuid: signedIn.userUuid,
    tokenUuid: signedIn.tokenUuid,
    sessionUuid: signedIn.sessionUuid,
    redirectUri: request.redirectUri,
    scope: grantedScope.join(" "),
    nonce: request.nonce,
    codeChallenge: request.codeChallenge,
    authTime: auth.authTime,
    amr: auth.amr,
    browserSessionId: auth.browserSessionId,
    resource: request.resource ?? null,
    expiresAt: new Date(Date.now() + CODE_LIFETIME_SECONDS * 1000),
  });
  return code;
}
