// What the token endpoint hands out, whatever the grant: the record of an issued access token (read
// by userinfo, introspection and revocation) and refresh tokens (OIDC Core §11, RFC 6749 §6) with
// their families. Each grant's own handler is a file of the registry (grants/index.ts).
import { createHash, randomBytes } from "node:crypto";
import { eq, lt, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { oidcAccessTokens, oidcRefreshTokens, refreshTokens, users } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { type AuditActor, recordAudit, SYSTEM_ACTOR } from "../audit/record.ts";
import { purgeRefreshToken } from "../auth/refresh-tokens.ts";
import type { CachedToken } from "../auth/token-cache.ts";
import { scopesBeyond } from "./acl-scope.ts";
import type { ClientRow } from "./clients.ts";
import { OAuthError } from "./oauth-error.ts";

export type Form = Record<string, string | undefined>;

export interface TokenResponse {
  access_token: string;
  /** RFC 9449 §5: `DPoP` when the access token is bound to the client's key. */
  token_type: "Bearer" | "DPoP";
  expires_in: number;
  scope: string;
  id_token?: string;
  refresh_token?: string;
  /** RFC 8693 §2.2.1: what a token exchange issued. */
  issued_token_type?: string;
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

/**
 * A new refresh token of `familyUuid` (256 random bits, or `token`; stored as its SHA-256), returned
 * once, linked to the session of the sign-in it descends from (its refreshes continue that session)
 * and that sign-in's `sid`.
 */
export async function mintRefreshToken(
  app: AppContext,
  tx: DbOrTx,
  r: {
    familyUuid: string;
    client: ClientRow;
    userUuid: string;
    scope: string[];
    authTime: number;
    amr: string[];
    sessionUuid: string | null;
    sid: string | null;
  },
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
    sessionUuid: r.sessionUuid,
    sid: r.sid,
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
