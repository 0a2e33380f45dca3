// RFC 8693 OAuth 2.0 Token Exchange (docs/openid-connect.md "Token exchange"): a client exchanges
// a Tessera access token (the subject) for a new one that is never wider — its ACL is the subject's,
// narrowed by the ACL scopes asked for under the grant rule (domain/acl-grant.ts) — possibly for a
// resource server (`resource` / `audience`, shaped by the token endpoint: access-jwt.ts). With an
// `actor_token`, the new token says who acts for the subject (§4.1 `act`, delegation). An
// administrator holding `auth.users.{uuid}.impersonate` may instead name a user of its subtree by
// uuid (subject_token_type `urn:tessera:params:oauth:token-type:user_uuid`, its own token as the
// actor_token): the token is the user's, with `act` naming the administrator, audited with both.
// Which clients may exchange: those registered with this grant type (confidential only).
import type { AppContext } from "../../../boot/context.ts";
import { oidcAccessTokens, users } from "../../../db/schema.ts";
import { eq } from "drizzle-orm";
import { grantCheck } from "../../../domain/acl-grant.ts";
import { AuthenticationFailed, TooManySessions } from "../../../domain/errors.ts";
import { isUuid } from "../../../domain/validate.ts";
import { auditInsert, auditOutboxInsert, recordAudit } from "../../audit/record.ts";
import { revokeToken } from "../../auth/sessions.ts";
import { inTransaction } from "../../../db/tx.ts";
import { loginAuthenticatedUser } from "../../auth/authentication.ts";
import type { CachedToken } from "../../auth/token-cache.ts";
import { findValidToken, insertToken, isTokenShaped } from "../../auth/tokens.ts";
import { sessionCreatedEvent } from "../../events.ts";
import { looksLikeJwt, resolveAccessJwt } from "../access-jwt.ts";
import { aclScopes, narrowAcl } from "../acl-scope.ts";
import type { ClientRow } from "../clients.ts";
import { clientActor, type Form, type RequestOrigin, requestedScope, type TokenResponse } from "../grants.ts";
import { OAuthError, sessionCapReached } from "../oauth-error.ts";
import type { Grant } from "./grant.ts";

export const TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";
/** RFC 8693 §3: token type identifiers. */
export const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
const JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt";
/** Tessera's own (RFC 8693 §3 allows others): the subject is a user named by uuid (impersonation). */
export const USER_UUID_TOKEN_TYPE = "urn:tessera:params:oauth:token-type:user_uuid";
/** The ACL an administrator needs to impersonate a user (`{uuid}` the user's). */
export const IMPERSONATE_ACL = "auth.users.{uuid}.impersonate";

export const tokenExchangeGrant: Grant<typeof TOKEN_EXCHANGE_GRANT> = {
  type: TOKEN_EXCHANGE_GRANT,
  parameters: [
    "subject_token",
    "subject_token_type",
    "actor_token",
    "actor_token_type",
    "requested_token_type",
    "scope",
    "audience",
  ],
  handle: (app, client, form, { origin }) => exchangeToken(app, client, form, origin),
};

/** RFC 8693 §2.2.2: an invalid or unacceptable subject or actor token is `invalid_request`. */
const invalidRequest = (description: string) => new OAuthError(400, "invalid_request", description);

/** A presented token (§2.1): a Tessera token or one of the provider's JWTs, valid, with its ACL as presented. */
interface Presented {
  token: CachedToken;
  acl: string[];
  /** The user it is of, or null (a client's own token). */
  userUuid: string | null;
  tenantUuid: string | null;
  /** RFC 8693 §4.1: the subject identifier an `act` claim names. */
  sub: string;
  /** The `act` the presented token carries already (a chain of delegation, §4.1). */
  act: Record<string, unknown> | null;
}

async function presented(app: AppContext, value: string | undefined, type: string | undefined, what: string) {
  if (!value) throw invalidRequest(`${what} is required`);
  if (type !== ACCESS_TOKEN_TYPE && type !== JWT_TOKEN_TYPE)
    throw invalidRequest(`${what}_type must be ${ACCESS_TOKEN_TYPE}`);
  const jwt = looksLikeJwt(value) ? await resolveAccessJwt(app, value) : null;
  const uuid = jwt?.anchorUuid ?? (isTokenShaped(value) ? value : null);
  const token = uuid ? await findValidToken(app, uuid) : null;
  if (!token) throw invalidRequest(`the ${what} is invalid or expired`);
  const [record] = await app.db
    .select({ act: oidcAccessTokens.act, clientId: oidcAccessTokens.clientId })
    .from(oidcAccessTokens)
    .where(eq(oidcAccessTokens.tokenUuid, token.uuid));
  const userUuid = typeof token.metadata.uuid === "string" ? token.metadata.uuid : null;
  const tenantUuid = (token.metadata.tenant_uuid as string | undefined) ?? null;
  const clientSub = token.authId.startsWith("oidc_client:") ? token.authId.slice("oidc_client:".length) : null;
  return {
    token,
    acl: jwt ? jwt.claims.acl : token.acl,
    userUuid,
    tenantUuid,
    sub: userUuid ?? clientSub ?? token.authId,
    act: (record?.act as Record<string, unknown> | null | undefined) ?? null,
  } satisfies Presented;
}

/** The token is of the client's tenant or one of its sub-tenants (tenant isolation). */
async function requireReach(app: AppContext, client: ClientRow, p: Presented, what: string) {
  if (!p.tenantUuid || !(await app.tenantTree.isSubtenant(app.db, p.tenantUuid, client.tenantUuid)))
    throw invalidRequest(`the ${what} is invalid or expired`); // the same answer: nothing learnt of other tenants
}

/**
 * The ACL of the new token: the subject's, narrowed by the ACL scopes asked for. Asking for a
 * pattern the subject could not grant (the grant rule: its allow entries cover it, no deny entry
 * overlaps it) is refused, never silently narrowed: an exchange only ever narrows.
 */
function exchangedAcl(subject: Presented, scope: string[]): string[] {
  const requested = aclScopes(scope);
  const id = { authId: subject.token.authId, sessionUuid: subject.token.sessionUuid };
  if (requested) {
    const rule = grantCheck(subject.acl, id);
    const beyond = requested.filter((p) => !rule.mayGrant(p));
    if (beyond.length)
      throw new OAuthError(400, "invalid_scope", `beyond the subject token's ACL: ${beyond.join(" ")}`);
  }
  return narrowAcl(subject.acl, requested, id);
}

async function exchangeToken(
  app: AppContext,
  client: ClientRow,
  form: Form,
  origin: RequestOrigin,
): Promise<TokenResponse> {
  if (client.clientType !== "confidential")
    throw new OAuthError(400, "unauthorized_client", "confidential clients only");
  const wanted = form.requested_token_type;
  if (wanted !== undefined && wanted !== ACCESS_TOKEN_TYPE && wanted !== JWT_TOKEN_TYPE)
    throw invalidRequest(`requested_token_type must be ${ACCESS_TOKEN_TYPE}`);
  if (form.subject_token_type === USER_UUID_TOKEN_TYPE) return impersonate(app, client, form, origin);
  const subject = await presented(app, form.subject_token, form.subject_token_type, "subject_token");
  await requireReach(app, client, subject, "subject_token");
  const actor =
    form.actor_token !== undefined
      ? await presented(app, form.actor_token, form.actor_token_type, "actor_token")
      : null;
  if (actor) await requireReach(app, client, actor, "actor_token");
  else if (form.actor_token_type !== undefined) throw invalidRequest("actor_token_type without actor_token");
  const scope = requestedScope(client, form.scope, []);
  const acl = exchangedAcl(subject, scope);
  const act = actor ? actClaim(actor) : subject.act;
  return issueExchanged(app, client, origin, { subject, acl, scope, act, impersonation: false });
}

/** RFC 8693 §4.1: who acts, and who acted for it before (a chain, most recent outermost). */
function actClaim(actor: Presented): Record<string, unknown> {
  return actor.act ? { sub: actor.sub, act: actor.act } : { sub: actor.sub };
}

async function issueExchanged(
  app: AppContext,
  client: ClientRow,
  origin: RequestOrigin,
  x: {
    subject: Presented;
    acl: string[];
    scope: string[];
    act: Record<string, unknown> | null;
    impersonation: boolean;
  },
): Promise<TokenResponse> {
  const { subject } = x;
  const now = Math.floor(Date.now() / 1000);
  const lifetime = client.accessTokenLifetime ?? app.config.default_token_lifetime;
  const expiration = Math.max(1, Math.min(lifetime, subject.token.expireT - now));
  const tenantUuid = subject.tenantUuid ?? client.tenantUuid;
  const tokenUuid = crypto.randomUUID();
  const issued = await insertToken(
    app,
    app.db,
    {
      uuid: tokenUuid,
      authId: subject.token.authId,
      pbxUserUuid: subject.token.pbxUserUuid,
      acl: x.acl,
      metadata: { ...subject.token.metadata },
      expiration,
      userAgent: origin.userAgent,
      remoteAddr: origin.remoteAddr,
      sessionTenantUuid: tenantUuid,
      mobile: false,
      // The subject's refresh token family, if any: ending it ends this token too.
      refreshTokenUuid: subject.token.refreshTokenUuid,
    },
    (sessionUuid) => sessionCreatedEvent({ uuid: sessionUuid, tenantUuid, userUuid: subject.userUuid, mobile: false }),
    (sessionUuid) => {
      const actor = clientActor(origin, client.tenantUuid, sessionUuid);
      const entry = {
        action: "token.exchange",
        target: { kind: subject.userUuid ? "user" : "oidc_client", uuid: subject.sub, tenantUuid },
        changes: [
          { field: "client_id", old: null, new: client.clientId },
          { field: "subject", old: null, new: subject.sub },
          ...(x.act ? [{ field: "actor", old: null, new: x.act.sub as string }] : []),
          ...(x.impersonation ? [{ field: "impersonation", old: null, new: true }] : []),
        ],
      };
      return [
        {
          table: oidcAccessTokens,
          row: {
            tokenUuid,
            sessionUuid,
            clientId: client.clientId,
            userUuid: subject.userUuid,
            grantType: TOKEN_EXCHANGE_GRANT,
            scope: x.scope.join(" "),
            act: x.act,
          },
        },
        auditInsert(app, app.db, actor, entry),
        auditOutboxInsert(app, app.db, actor, entry),
      ];
    },
  );
  // RFC 8693 §2.2.1: `issued_token_type` is required in the answer.
  return {
    access_token: issued.record.uuid,
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: "Bearer",
    expires_in: Math.max(0, Math.floor(issued.expiresAt - now)),
    scope: x.scope.join(" "),
  };
}

/**
 * Impersonation: the subject is a user named by uuid, the actor an administrator's token holding
 * `auth.users.{uuid}.impersonate`, whose tenant (or a parent of it) is the user's. The user gets no
 * password asked: the token is issued as a refresh-token login issues one (the user's current ACL;
 * a disabled user gets nothing), narrowed by the ACL scopes asked for, with `act` naming the
 * administrator; the audit trail records both identities.
 */
async function impersonate(
  app: AppContext,
  client: ClientRow,
  form: Form,
  origin: RequestOrigin,
): Promise<TokenResponse> {
  const userUuid = form.subject_token?.toLowerCase() ?? "";
  if (!isUuid(userUuid)) throw invalidRequest("the subject_token is invalid or expired");
  if (form.actor_token === undefined) throw invalidRequest("impersonation needs the administrator's actor_token");
  const admin = await presented(app, form.actor_token, form.actor_token_type, "actor_token");
  await requireReach(app, client, admin, "actor_token");
  const [user] = await app.db
    .select({ username: users.username, tenantUuid: users.tenantUuid })
    .from(users)
    .where(eq(users.uuid, userUuid));
  const allowed =
    user?.username &&
    admin.tenantUuid &&
    (await app.tenantTree.isSubtenant(app.db, user.tenantUuid, admin.tenantUuid)) &&
    (await app.tenantTree.isSubtenant(app.db, user.tenantUuid, client.tenantUuid)) &&
    admin.token.matcher.matches(IMPERSONATE_ACL.replace("{uuid}", userUuid));
  // One answer for an unknown user and a refused one: nothing learnt of who exists.
  if (!allowed || !user?.username) throw invalidRequest("the subject_token is invalid or not to be impersonated");
  const scope = requestedScope(client, form.scope, []);
  const requested = aclScopes(scope);
  let login: Awaited<ReturnType<typeof loginAuthenticatedUser>>;
  try {
    login = await loginAuthenticatedUser(app, {
      login: user.username,
      userUuid,
      body: { expiration: client.accessTokenLifetime ?? app.config.default_token_lifetime },
      userAgent: origin.userAgent,
      remoteAddr: origin.remoteAddr,
      forwarded: origin.forwarded,
      headers: {},
      ...(requested ? { narrowAcl: (acl: string[], id: { authId: string }) => narrowAcl(acl, requested, id) } : {}),
    });
  } catch (e) {
    if (e instanceof AuthenticationFailed)
      throw invalidRequest("the subject_token is invalid or not to be impersonated");
    if (e instanceof TooManySessions) throw sessionCapReached();
    throw e;
  }
  // The login's token is the impersonation's: recorded as the exchange's, with `act`, and audited
  // with both identities in one transaction.
  const act = actClaim(admin);
  const tokenUuid = login.token.token;
  try {
    await inTransaction(app, async (tx) => {
      await tx.insert(oidcAccessTokens).values({
        tokenUuid,
        sessionUuid: login.token.session_uuid,
        clientId: client.clientId,
        userUuid,
        grantType: TOKEN_EXCHANGE_GRANT,
        scope: scope.join(" "),
        act,
      });
      await recordAudit(app, tx, clientActor(origin, client.tenantUuid, login.token.session_uuid), {
        action: "token.exchange",
        target: { kind: "user", uuid: userUuid, tenantUuid: user.tenantUuid },
        changes: [
          { field: "client_id", old: null, new: client.clientId },
          { field: "subject", old: null, new: userUuid },
          { field: "actor", old: null, new: admin.sub },
          { field: "impersonation", old: null, new: true },
        ],
      });
    });
  } catch (e) {
    await revokeToken(app, tokenUuid).catch(() => undefined); // never a half-issued token
    throw e;
  }
  return {
    access_token: tokenUuid,
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: "Bearer",
    expires_in: Math.max(0, Math.floor((Date.parse(login.token.utc_expires_at) - Date.now()) / 1000)),
    scope: scope.join(" "),
  };
}
