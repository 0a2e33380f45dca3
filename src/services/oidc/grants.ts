// What the token endpoint hands out, whatever the grant: the record of an issued access token (read
// by userinfo, introspection and revocation), refresh tokens (OIDC Core §11, RFC 6749 §6; rotated
// for public clients with reuse detection, RFC 9700 §4.14.2), the refresh grant, and the client
// credentials grant (RFC 6749 §4.4).
import { createHash, createHmac, randomBytes } from "node:crypto";
import { and, eq, isNull, lt, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { oidcAccessTokens, oidcRefreshTokens, refreshTokens, users } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { ApiError, AuthenticationFailed, ServiceUnavailable, TooManySessions } from "../../domain/errors.ts";
import { type AuditActor, auditInsert, auditOutboxInsert, recordAudit, SYSTEM_ACTOR } from "../audit/record.ts";
import { login } from "../auth/authentication.ts";
import { purgeRefreshToken } from "../auth/refresh-tokens.ts";
import { revokeToken } from "../auth/sessions.ts";
import type { CachedToken } from "../auth/token-cache.ts";
import { findValidToken, insertToken } from "../auth/tokens.ts";
import { sessionCreatedEvent } from "../events.ts";
import { aclNarrowing, aclScopes, narrowAcl, scopesBeyond } from "./acl-scope.ts";
import { userClaims } from "./claims.ts";
import type { ClientRow } from "./clients.ts";
import { signIdToken } from "./id-token.ts";
import { invalidGrant, OAuthError, sessionCapReached } from "./oauth-error.ts";

export type Form = Record<string, string | undefined>;

export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  scope: string;
  id_token?: string;
  refresh_token?: string;
}

/** Where the token request came from (the session's user agent and address, the login's throttling). */
export interface RequestOrigin {
  userAgent: string;
  remoteAddr: string;
  forwarded: boolean;
}

/** The actor of a client's request at the token endpoint: no user, the client's own tenant and session if any. */
export function clientActor(
  origin: RequestOrigin,
  tenantUuid: string | null,
  sessionUuid: string | null = null,
): AuditActor {
  return { userUuid: null, sessionUuid, tenantUuid, address: origin.remoteAddr, userAgent: origin.userAgent || null };
}

export const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

/** The auth_id of a client's own tokens: not a uuid, so nothing takes the client for a user. */
export const clientAuthId = (clientId: string) => `oidc_client:${clientId}`;

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A requested scope (RFC 6749 §3.3) within what the client may ask for; `invalid_scope` otherwise (§5.2). */
export function requestedScope(client: ClientRow, raw: string | undefined, fallback: string[]): string[] {
  if (raw === undefined) return fallback;
  const scope = [...new Set(raw.split(" ").filter(Boolean))];
  const refused = scopesBeyond(client.scopes, scope);
  if (refused.length)
    throw new OAuthError(400, "invalid_scope", `scope not allowed for this client: ${refused.join(" ")}`);
  return scope;
}

export async function recordAccessToken(
  tx: DbOrTx,
  t: {
    tokenUuid: string;
    sessionUuid: string;
    clientId: string;
    userUuid: string | null;
    grantType: string;
    scope: string[];
  },
): Promise<void> {
  await tx.insert(oidcAccessTokens).values({ ...t, scope: t.scope.join(" ") });
}

export type AccessGrant = NonNullable<CachedToken["oidcGrant"]>;

/**
 * What an access token was issued for, or null when the provider did not issue it (a plain Tessera
 * token). The record never changes once the token is handed out, so it is kept on the cached token.
 */
export async function grantOfToken(
  app: AppContext,
  tokenUuid: string,
  cached?: CachedToken,
): Promise<AccessGrant | null> {
  if (cached?.oidcGrant !== undefined) return cached.oidcGrant;
  const [row] = await app.db.select().from(oidcAccessTokens).where(eq(oidcAccessTokens.tokenUuid, tokenUuid));
  const grant = row ? { ...row, scope: row.scope.split(" ").filter(Boolean) } : null;
  if (cached) cached.oidcGrant = grant;
  return grant;
}

/** A new refresh token of `familyUuid` (256 random bits, or `token`; stored as its SHA-256), returned once. */
export async function mintRefreshToken(
  app: AppContext,
  tx: DbOrTx,
  r: { familyUuid: string; client: ClientRow; userUuid: string; scope: string[]; authTime: number; amr: string[] },
  token = randomBytes(32).toString("base64url"),
): Promise<string> {
  const lifetime = r.client.refreshTokenLifetime ?? app.config.oidc.refresh_token_lifetime;
  await tx.insert(oidcRefreshTokens).values({
    tokenHash: hashToken(token),
    familyUuid: r.familyUuid,
    clientId: r.client.clientId,
    userUuid: r.userUuid,
    scope: r.scope.join(" "),
    authTime: r.authTime,
    amr: r.amr,
    expiresAt: lifetime > 0 ? new Date(Date.now() + lifetime * 1000) : null,
  });
  return token;
}

/** Whether a grant's scope makes a refresh token (OIDC Core §11: `offline_access`, for a client allowed the refresh grant). */
export const offlineGranted = (client: ClientRow, scope: string[]) =>
  scope.includes("offline_access") && client.grantTypes.includes("refresh_token");

/**
 * Ends a refresh token family: the Tessera refresh token, every OIDC refresh token of it and every
 * session issued from it, with their events (what DELETE /users/{uuid}/tokens/{client_id} does),
 * and an audit entry naming the client and the reason (never the refresh token: it is the secret).
 */
export async function revokeFamily(
  app: AppContext,
  familyUuid: string,
  reason: string,
  actor: AuditActor = SYSTEM_ACTOR,
): Promise<number> {
  return inTransaction(app, (tx) => endFamily(app, tx, eq(refreshTokens.uuid, familyUuid), reason, actor));
}

/** `revokeFamily` within the caller's transaction, for the family `which` selects (none: 0). */
export async function endFamily(
  app: AppContext,
  tx: DbOrTx,
  which: SQL,
  reason: string,
  actor: AuditActor,
): Promise<number> {
  const [rt] = await tx
    .select({ row: refreshTokens, tenantUuid: users.tenantUuid })
    .from(refreshTokens)
    .innerJoin(users, eq(users.uuid, refreshTokens.userUuid))
    .where(which);
  if (!rt) return 0;
  const revoked = await purgeRefreshToken(app, tx, rt.row, rt.tenantUuid);
  await recordAudit(app, tx, actor, {
    action: "refresh_token.revoke",
    target: { kind: "user", uuid: rt.row.userUuid, tenantUuid: rt.tenantUuid },
    changes: [
      { field: "client_id", old: null, new: rt.row.clientId },
      { field: "reason", old: null, new: reason },
    ],
  });
  app.log.warn("OIDC refresh token family revoked", { family: rt.row.uuid, reason, sessions_revoked: revoked });
  return revoked;
}

/** Whether refresh tokens of the family were ever handed to its client (its grant is in use). */
export async function familyHandedOut(app: AppContext, familyUuid: string): Promise<boolean> {
  const [row] = await app.db
    .select({ h: oidcRefreshTokens.tokenHash })
    .from(oidcRefreshTokens)
    .where(eq(oidcRefreshTokens.familyUuid, familyUuid))
    .limit(1);
  return row !== undefined;
}

/** The refresh token a client presents, or null; never one of another client. */
export async function findRefreshToken(app: AppContext, presented: string) {
  if (!presented || presented.length > 256) return null;
  const [row] = await app.db
    .select()
    .from(oidcRefreshTokens)
    .where(eq(oidcRefreshTokens.tokenHash, hashToken(presented)));
  return row ?? null;
}

/** Expired refresh tokens go (rotated ones are kept until then, to recognise their reuse). */
export async function purgeExpiredRefreshTokens(app: AppContext): Promise<number> {
  const gone = await app.db
    .delete(oidcRefreshTokens)
    .where(lt(oidcRefreshTokens.expiresAt, new Date()))
    .returning({ h: oidcRefreshTokens.tokenHash });
  return gone.length;
}

const isExpired = (expiresAt: Date | null) => expiresAt !== null && expiresAt.getTime() <= Date.now();

type RefreshTokenRow = typeof oidcRefreshTokens.$inferSelect;

/**
 * A rotation's successor, derived from the presented token (HMAC-SHA-256 keyed by a salt kept on the
 * rotated row): only a holder of the predecessor can derive it again, and the database keeps hashes
 * only. Shaped as every refresh token (43 base64url characters, 256 bits).
 */
const successorOf = (presented: string, salt: string) =>
  createHmac("sha256", salt).update(presented).digest("base64url");

/**
 * RFC 9700 §4.14.2 allows tolerating a retry: a public client whose refresh answer was lost (a 503,
 * a failover, a connection cut) presents the token it just rotated again. Within
 * `oidc.refresh_token_reuse_grace` seconds of the rotation, and while the successor is unused (for a
 * public client, not rotated in turn) and unexpired, that client gets the same successor back.
 * Another client was refused before; an older token's successor is itself rotated: reuse.
 */
async function graceSuccessor(
  app: AppContext,
  rt: RefreshTokenRow,
  presented: string,
): Promise<{ token: string; tokenHash: string } | null> {
  const graceMs = app.config.oidc.refresh_token_reuse_grace * 1000;
  if (rt.rotatedAt === null || rt.successorSalt === null || Date.now() - rt.rotatedAt.getTime() >= graceMs) return null;
  const token = successorOf(presented, rt.successorSalt);
  const next = await findRefreshToken(app, token);
  if (!next || next.familyUuid !== rt.familyUuid || next.clientId !== rt.clientId) return null;
  if (next.rotatedAt !== null || isExpired(next.expiresAt)) return null;
  return { token, tokenHash: next.tokenHash };
}

/**
 * The access token the lost answer carried, when it is still valid and was issued for the scope
 * asked now: a retry then gets that same answer again (and two requests racing with one token get
 * the same one), with no new session.
 */
async function successorAccess(
  app: AppContext,
  rt: RefreshTokenRow,
  scope: string[],
): Promise<{ accessToken: string; expiresIn: number } | null> {
  if (!rt.successorTokenUuid) return null;
  const cached = await findValidToken(app, rt.successorTokenUuid);
  const grant = cached ? await grantOfToken(app, rt.successorTokenUuid, cached) : null;
  if (!cached || grant?.scope.join(" ") !== scope.join(" ")) return null;
  return { accessToken: rt.successorTokenUuid, expiresIn: Math.max(0, cached.expireT - nowSeconds()) };
}

/**
 * RFC 6749 §6 and OIDC Core §12: a new access token — a new Tessera session, logged in again as
 * POST /0.1/token's refresh-token login does (the user's current ACL; a disabled or deleted user
 * gets nothing) and narrowed by the grant's ACL scopes. A public client's refresh token is rotated:
 * presenting a rotated one again revokes the whole family and its sessions (RFC 9700 §4.14.2),
 * except the retry of a lost answer within the grace period (`graceSuccessor`), which gets that
 * answer again. `abandoned` tells that the request was already answered 503 (http/deadline.ts):
 * the rotation then rolls back, as the client never saw its successor.
 */
export async function refreshGrant(
  app: AppContext,
  client: ClientRow,
  form: Form,
  issuer: string,
  origin: RequestOrigin,
  abandoned: () => boolean = () => false,
): Promise<TokenResponse> {
  const presented = form.refresh_token ?? "";
  const rt = await findRefreshToken(app, presented);
  if (!rt) throw invalidGrant("the refresh token is invalid, expired or revoked");
  // RFC 6749 §6: the refresh token was issued to the authenticated client.
  if (rt.clientId !== client.clientId) throw invalidGrant("the refresh token was issued to another client");
  const reuse = "a rotated refresh token was presented again";
  const actor = clientActor(origin, client.tenantUuid);
  const retried = rt.rotatedAt !== null ? await graceSuccessor(app, rt, presented) : null;
  if (rt.rotatedAt !== null && !retried) {
    await revokeFamily(app, rt.familyUuid, reuse, actor);
    throw invalidGrant("the refresh token is invalid, expired or revoked");
  }
  if (!retried && isExpired(rt.expiresAt)) throw invalidGrant("the refresh token is invalid, expired or revoked");
  const granted = rt.scope.split(" ");
  // RFC 6749 §6: a narrower scope may be asked for, never one the grant did not include.
  const scope = form.scope === undefined ? granted : [...new Set(form.scope.split(" ").filter(Boolean))];
  const beyond = scopesBeyond(granted, scope);
  if (beyond.length) throw new OAuthError(400, "invalid_scope", `scope not granted: ${beyond.join(" ")}`);
  if (retried) app.log.info("OIDC refresh retried within the grace period", { client_id: client.clientId });
  let issued = (retried && (await successorAccess(app, rt, scope))) || null;
  let next = retried?.token;
  if (!issued) {
    const token = await loginOrInvalidGrant(app, {
      login: null,
      password: null,
      body: {
        refresh_token: rt.familyUuid,
        client_id: client.clientId,
        expiration: client.accessTokenLifetime ?? app.config.default_token_lifetime,
      },
      mobile: false,
      userAgent: origin.userAgent,
      remoteAddr: origin.remoteAddr,
      forwarded: origin.forwarded,
      headers: {},
      narrowAcl: aclNarrowing(scope),
    });
    let reused = false;
    try {
      await inTransaction(app, async (tx) => {
        if (retried) {
          // The successor, locked: still unused now (a concurrent use of it waits for this commit).
          const [unused] = await tx
            .select({ h: oidcRefreshTokens.tokenHash })
            .from(oidcRefreshTokens)
            .where(and(eq(oidcRefreshTokens.tokenHash, retried.tokenHash), isNull(oidcRefreshTokens.rotatedAt)))
            .for("update");
          if (!unused) {
            reused = true;
            return;
          }
          await tx
            .update(oidcRefreshTokens)
            .set({ successorTokenUuid: token.token })
            .where(eq(oidcRefreshTokens.tokenHash, rt.tokenHash));
        } else if (client.clientType === "public") {
          const salt = randomBytes(32).toString("base64url");
          const spent = await tx
            .update(oidcRefreshTokens)
            .set({ rotatedAt: new Date(), successorSalt: salt, successorTokenUuid: token.token })
            .where(and(eq(oidcRefreshTokens.tokenHash, rt.tokenHash), isNull(oidcRefreshTokens.rotatedAt)))
            .returning({ h: oidcRefreshTokens.tokenHash });
          // Two refreshes with one token: the second is a reuse.
          if (spent.length === 0) {
            reused = true;
            return;
          }
          next = await mintRefreshToken(app, tx, { ...rt, client, scope: granted }, successorOf(presented, salt));
        }
        await recordAccessToken(tx, {
          tokenUuid: token.token,
          sessionUuid: token.session_uuid,
          clientId: client.clientId,
          userUuid: rt.userUuid,
          grantType: "refresh_token",
          scope,
        });
        // The answer is already a 503: committing would rotate a token the client still holds.
        if (abandoned()) throw new ServiceUnavailable("tokens", "the request was answered before its rotation");
      });
    } catch (e) {
      // Never a half-issued token: the session made above goes when its record could not be written.
      await revokeToken(app, token.token).catch(() => undefined);
      throw e;
    }
    if (reused && !retried) {
      // A concurrent refresh with the same token rotated it first: this one is then judged as a
      // retry of that one (once: the token read again is rotated, so no second rotation is tried).
      await revokeToken(app, token.token).catch(() => undefined);
      return refreshGrant(app, client, form, issuer, origin, abandoned);
    }
    if (reused) {
      await revokeFamily(app, rt.familyUuid, reuse, actor);
      throw invalidGrant("the refresh token is invalid, expired or revoked");
    }
    issued = { accessToken: token.token, expiresIn: expiresIn(token.utc_expires_at) };
  }
  const answer: TokenResponse = {
    access_token: issued.accessToken,
    token_type: "Bearer",
    expires_in: issued.expiresIn,
    scope: scope.join(" "),
    // The successor (a public client's rotation, or the retry's); else the token stays.
    refresh_token: next ?? presented,
  };
  if (scope.includes("openid")) {
    const claims = await userClaims(app, rt.userUuid, scope);
    if (!claims) throw invalidGrant("the user no longer exists");
    // OIDC Core §12.2: same iss, sub, aud; auth_time of the original authentication; no nonce.
    answer.id_token = await signIdToken(app, {
      issuer,
      client,
      claims: claims as Record<string, unknown> & { sub: string },
      authTime: rt.authTime,
      nonce: null,
      amr: rt.amr,
      accessToken: issued.accessToken,
    });
  }
  return answer;
}

export const expiresIn = (utcExpiresAt: string) =>
  Math.max(0, Math.floor((Date.parse(utcExpiresAt) - Date.now()) / 1000));

/** The login behind a grant; a refused login (revoked grant, disabled user) is `invalid_grant`. */
async function loginOrInvalidGrant(app: AppContext, req: Parameters<typeof login>[1]) {
  try {
    return (await login(app, req)).token;
  } catch (e) {
    if (e instanceof AuthenticationFailed) throw invalidGrant("the grant was revoked");
    if (e instanceof TooManySessions) throw sessionCapReached();
    if (e instanceof ApiError && e.status === 429)
      throw new OAuthError(429, "temporarily_unavailable", "too many attempts; try again later");
    throw e;
  }
}

/**
 * RFC 6749 §4.4: a confidential client's own token — a Tessera session of the client as a service
 * principal, with the ACL of the client (`acl`, set by an administrator under the grant rule),
 * narrowed by the ACL scopes asked for. No refresh token (§4.4.3), no ID token (no user).
 */
export async function clientCredentialsGrant(
  app: AppContext,
  client: ClientRow,
  form: Form,
  origin: RequestOrigin,
): Promise<TokenResponse> {
  if (client.clientType !== "confidential")
    throw new OAuthError(400, "unauthorized_client", "confidential clients only");
  const scope = requestedScope(client, form.scope, []).filter((s) => s.startsWith("acl:"));
  const authId = clientAuthId(client.clientId);
  const acl = narrowAcl(client.acl, aclScopes(scope), { authId });
  const expiration = client.accessTokenLifetime ?? app.config.default_token_lifetime;
  const tokenUuid = crypto.randomUUID();
  // One statement, so one round trip and atomic on its own: the session, its event, the token, the
  // token's record and the client's login in the audit trail (with its bus copy) — all or nothing.
  const issued = await insertToken(
    app,
    app.db,
    {
      uuid: tokenUuid,
      authId,
      pbxUserUuid: null,
      acl,
      metadata: { auth_id: authId, tenant_uuid: client.tenantUuid, purpose: "oidc_client", client_id: client.clientId },
      expiration,
      userAgent: origin.userAgent,
      remoteAddr: origin.remoteAddr,
      sessionTenantUuid: client.tenantUuid,
      mobile: false,
    },
    (sessionUuid) =>
      sessionCreatedEvent({ uuid: sessionUuid, tenantUuid: client.tenantUuid, userUuid: null, mobile: false }),
    (sessionUuid) => {
      // The client's login: a decision like a user's (its service principal has no user uuid).
      const actor = clientActor(origin, client.tenantUuid, sessionUuid);
      const entry = {
        action: "login.success",
        target: { kind: "oidc_client", uuid: client.clientId, tenantUuid: client.tenantUuid },
        changes: [{ field: "grant_type", old: null, new: "client_credentials" }],
      };
      const record = { tokenUuid, sessionUuid, clientId: client.clientId, userUuid: null };
      return [
        app.db.insert(oidcAccessTokens).values({ ...record, grantType: "client_credentials", scope: scope.join(" ") }),
        auditInsert(app, app.db, actor, entry),
        auditOutboxInsert(app, app.db, actor, entry),
      ];
    },
  );
  return {
    access_token: issued.record.uuid,
    token_type: "Bearer",
    expires_in: Math.max(0, Math.floor(issued.expiresAt - nowSeconds())),
    scope: scope.join(" "),
  };
}
