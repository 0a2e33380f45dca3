// RFC 6749 §6 and OIDC Core §12: a refresh token for a new access token, its scope narrowed at will.
// A public client's refresh token is rotated, with reuse detection (RFC 9700 §4.14.2).
import { createHmac, randomBytes } from "node:crypto";
import { and, eq, inArray, isNull, lt, ne } from "drizzle-orm";
import type { AppContext } from "../../../boot/context.ts";
import type { DbOrTx } from "../../../db/index.ts";
import { oidcAccessTokens, oidcRefreshTokens, tokens } from "../../../db/schema.ts";
import { afterCommit, inTransaction } from "../../../db/tx.ts";
import { ApiError, AuthenticationFailed, ServiceUnavailable, TooManySessions } from "../../../domain/errors.ts";
import { login } from "../../auth/authentication.ts";
import { revokeToken } from "../../auth/sessions.ts";
import { deleteTokens, findValidToken } from "../../auth/tokens.ts";
import { aclNarrowing, scopesBeyond } from "../acl-scope.ts";
import { userClaims } from "../claims.ts";
import type { ClientRow } from "../clients.ts";
import {
  clientActor,
  findRefreshToken,
  type Form,
  grantOfToken,
  mintRefreshToken,
  recordAccessToken,
  type RequestOrigin,
  revokeFamily,
  type TokenResponse,
} from "../grants.ts";
import { signIdToken } from "../id-token.ts";
import { invalidGrant, OAuthError, sessionCapReached } from "../oauth-error.ts";
import type { Grant } from "./grant.ts";
import { metUpstream } from "../../integrations/upstream-oidc/amr.ts";

export const refreshTokenGrant: Grant<"refresh_token"> = {
  type: "refresh_token",
  parameters: ["refresh_token", "scope"],
  handle: (app, client, form, { issuer, origin, abandoned }) =>
    refreshGrant(app, client, form, issuer, origin, abandoned),
};

const nowSeconds = () => Math.floor(Date.now() / 1000);

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
 * RFC 6749 §6 and OIDC Core §12: a new access token, logged in again as POST /0.1/token's
 * refresh-token login does (the user's current ACL; a disabled or deleted user gets nothing) and
 * narrowed by the grant's ACL scopes — in the session of the sign-in the refresh token descends from
 * (one session per sign-in: no new session, no session cap; its `sid` and `auth_time` stay). That
 * session ended, its refresh tokens went with it (cascade): nothing resurrects it. A refresh token
 * issued before that link (migration 0042) opens a session once, as before, and is linked to it.
 * A public client's refresh token is rotated: presenting a rotated one again revokes the whole
 * family and its sessions (RFC 9700 §4.14.2), except the retry of a lost answer within the grace
 * period (`graceSuccessor`), which gets that answer again. `abandoned` tells that the request was already answered 503 (http/deadline.ts):
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
    const continued = rt.sessionUuid ?? undefined;
    const token = await loginOrInvalidGrant(app, {
      continueSession: continued,
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
      // The original sign-in's MFA met at a trusted upstream provider (amr `oidc mfa`): not enrol-only now.
      mfaMetUpstream: metUpstream(rt.amr),
    });
    // Never a half-issued token: a new session goes whole; a continued one loses this token only.
    const discard = () => (continued ? dropToken(app, token.token) : revokeToken(app, token.token));
    const sessionUuid = token.session_uuid;
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
          next = await mintRefreshToken(
            app,
            tx,
            { ...rt, client, scope: granted, sessionUuid: continued ?? sessionUuid },
            successorOf(presented, salt),
          );
        }
        // A token issued before the link: its lineage continues the session just opened.
        if (!continued)
          await tx
            .update(oidcRefreshTokens)
            .set({ sessionUuid })
            .where(
              and(
                inArray(oidcRefreshTokens.tokenHash, retried ? [rt.tokenHash, retried.tokenHash] : [rt.tokenHash]),
                isNull(oidcRefreshTokens.sessionUuid),
              ),
            );
        await recordAccessToken(tx, {
          tokenUuid: token.token,
          sessionUuid: token.session_uuid,
          clientId: client.clientId,
          userUuid: rt.userUuid,
          grantType: "refresh_token",
          scope,
        });
        if (continued) await pruneExpiredTokens(tx, continued, token.token);
        // The answer is already a 503: committing would rotate a token the client still holds.
        if (abandoned()) throw new ServiceUnavailable("tokens", "the request was answered before its rotation");
      });
    } catch (e) {
      await discard().catch(() => undefined);
      throw e;
    }
    if (reused && !retried) {
      // A concurrent refresh with the same token rotated it first: this one is then judged as a
      // retry of that one (once: the token read again is rotated, so no second rotation is tried).
      await discard().catch(() => undefined);
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
      // Back-Channel Logout 1.0 §2.1: the sign-in's sid, stable across its refreshes.
      sid: rt.sid,
    });
  }
  return answer;
}

/** A token of a continued session that could not be handed out: it goes, its session stays. */
async function dropToken(app: AppContext, tokenUuid: string): Promise<void> {
  await inTransaction(app, async (tx) => {
    await deleteTokens(tx, [tokenUuid]);
    afterCommit(tx, () => app.tokenCache.evict(tokenUuid));
  });
}

/**
 * A continued session keeps its live tokens (a client may still be using the previous access token)
 * and sheds its expired ones with their records: a session refreshed for weeks holds no pile of dead
 * tokens (the expiry purge leaves it alone while its refresh token lives: auth/token-cleanup.ts).
 */
async function pruneExpiredTokens(tx: DbOrTx, sessionUuid: string, keep: string): Promise<void> {
  const gone = await tx
    .delete(tokens)
    .where(and(eq(tokens.sessionUuid, sessionUuid), lt(tokens.expireT, nowSeconds()), ne(tokens.uuid, keep)))
    .returning({ uuid: tokens.uuid });
  if (gone.length)
    await tx.delete(oidcAccessTokens).where(
      inArray(
        oidcAccessTokens.tokenUuid,
        gone.map((t) => t.uuid),
      ),
    );
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
