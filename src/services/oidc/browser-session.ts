// The browser session of the hosted login page (OIDC Core §3.1.2.3 single sign-on): once a user
// signed in on the page, another client's authorization request in the same browser skips the
// form until logout, `max_age` or `prompt=login`. The cookie carries 256 random bits; the database
// keeps their SHA-256 only; its id, a random uuid, is the public `sid` of the ID tokens issued
// through it (never the cookie). The session ends at RP-initiated logout and, with every other session
// of the user, when its credentials change or it is disabled or deleted (revokeUserAccess).
import { createHash, randomBytes } from "node:crypto";
import { and, eq, gt, inArray, isNotNull, lt } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import {
  oidcBrowserSessionClients,
  oidcBrowserSessions,
  oidcClients,
  oidcCodes,
  oidcRefreshTokens,
  users,
} from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { revokeSessions, sessionsByUuids } from "../auth/sessions.ts";
import { isUuid } from "../../domain/validate.ts";
import { isSubtenant } from "../identity/tenant-tree.ts";
import { noticeBrowserSessionsEnding } from "./backchannel.ts";

export type BrowserSessionRow = typeof oidcBrowserSessions.$inferSelect;

export const BROWSER_SESSION_COOKIE = "tessera_oidc_session";
const COOKIE_SYNTAX = /^[A-Za-z0-9_-]{43}$/;

const hashCookie = (value: string) => createHash("sha256").update(value).digest("hex");

/**
 * Starts a browser session for a user who just authenticated; returns the cookie value (shown
 * once). A sign-in in a browser that already had a session (prompt=login, max_age, another
 * account): the same user's session is renewed in place — a new cookie, `auth_time` and `amr`,
 * the same id, so the `sid` of the ID tokens issued through it still names it and logout still
 * revokes every token issued through it; another user's session is ended, tokens revoked (the
 * browser now belongs to someone else).
 */
export async function startBrowserSession(
  app: AppContext,
  s: { userUuid: string; login: string; authTime: number; amr: string[] },
  previous: BrowserSessionRow | null = null,
): Promise<{ cookie: string; session: BrowserSessionRow }> {
  const cookie = randomBytes(32).toString("base64url");
  const values = {
    cookieHash: hashCookie(cookie),
    userUuid: s.userUuid,
    login: s.login,
    authTime: s.authTime,
    amr: s.amr,
    expiresAt: new Date(Date.now() + app.config.oidc.browser_session_lifetime * 1000),
  };
  if (previous && previous.userUuid === s.userUuid) {
    const [renewed] = await app.db
      .update(oidcBrowserSessions)
      .set(values)
      .where(eq(oidcBrowserSessions.id, previous.id))
      .returning();
    if (renewed) return { cookie, session: renewed };
  } else if (previous) {
    await endBrowserSession(app, previous.id);
  }
  const [session] = await app.db.insert(oidcBrowserSessions).values(values).returning();
  return { cookie, session: session! };
}

/** The live session a cookie names, with its user's tenant; null when absent, expired or malformed. */
export async function findBrowserSession(
  app: AppContext,
  cookie: string | undefined,
): Promise<(BrowserSessionRow & { tenantUuid: string }) | null> {
  if (!cookie || !COOKIE_SYNTAX.test(cookie)) return null;
  const [row] = await app.db
    .select({ session: oidcBrowserSessions, tenantUuid: users.tenantUuid, enabled: users.enabled })
    .from(oidcBrowserSessions)
    .innerJoin(users, eq(users.uuid, oidcBrowserSessions.userUuid))
    .where(and(eq(oidcBrowserSessions.cookieHash, hashCookie(cookie)), gt(oidcBrowserSessions.expiresAt, new Date())));
  if (!row?.enabled) return null;
  return { ...row.session, tenantUuid: row.tenantUuid };
}

/**
 * Whether the session may stand for a sign-in to `client`: its user is of the client's tenant or a
 * sub-tenant (a client signs in only those), and it is recent enough for `max_age` (OIDC Core §3.1.2.1).
 */
export async function sessionServes(
  app: AppContext,
  session: BrowserSessionRow & { tenantUuid: string },
  clientTenantUuid: string,
  maxAge: number | null,
): Promise<boolean> {
  if (maxAge !== null && Math.floor(Date.now() / 1000) - session.authTime > maxAge) return false;
  return isSubtenant(app.db, session.tenantUuid, clientTenantUuid, app.topTenantUuid);
}

/** The name a page shows for the session's user ("Signed in as …"): its username, else its login. */
export async function sessionUserName(app: AppContext, session: BrowserSessionRow): Promise<string> {
  const [user] = await app.db.select({ username: users.username }).from(users).where(eq(users.uuid, session.userUuid));
  return user?.username ?? session.login;
}

/**
 * RP-initiated logout: the browser session ends, and with it every Tessera session issued through
 * it (the access tokens of each client it signed in to), each with its event. The refresh tokens of
 * those sign-ins do not end: every Tessera refresh token is an `offline_access` grant, which OIDC
 * Core §11 defines as access "even when the End-User is not logged in". They are detached from the
 * ending session (and its `sid`) instead, so their next refresh opens a session of its own. Ending
 * a session any other way (deleted by the user or an administrator, a password change, the user
 * disabled) ends them with it.
 */
export async function endBrowserSession(app: AppContext, sessionId: string): Promise<number> {
  return inTransaction(app, async (tx) => {
    const issued = await tx
      .select({ sessionUuid: oidcCodes.sessionUuid })
      .from(oidcCodes)
      .where(and(eq(oidcCodes.browserSessionId, sessionId), isNotNull(oidcCodes.sessionUuid)));
    const sessionUuids = [...new Set(issued.map((r) => r.sessionUuid!))];
    if (sessionUuids.length)
      await tx
        .update(oidcRefreshTokens)
        .set({ sessionUuid: null, sid: null })
        .where(inArray(oidcRefreshTokens.sessionUuid, sessionUuids));
    const revoked = sessionUuids.length ? await revokeSessions(app, tx, sessionsByUuids(sessionUuids)) : [];
    await noticeBrowserSessionsEnding(app, tx, eq(oidcBrowserSessions.id, sessionId));
    await tx.delete(oidcBrowserSessions).where(eq(oidcBrowserSessions.id, sessionId));
    return revoked.length;
  });
}

/**
 * The live session an ID token's `sid` names (OpenID Connect Front-Channel Logout 1.0 §3), when it
 * is `userUuid`'s: RP-initiated logout ends it even from a browser without its cookie.
 */
export async function browserSessionBySid(
  app: AppContext,
  sid: string,
  userUuid: string,
): Promise<BrowserSessionRow | null> {
  if (!isUuid(sid)) return null;
  const [row] = await app.db
    .select()
    .from(oidcBrowserSessions)
    .where(
      and(
        eq(oidcBrowserSessions.id, sid),
        eq(oidcBrowserSessions.userUuid, userUuid),
        gt(oidcBrowserSessions.expiresAt, new Date()),
      ),
    );
  return row ?? null;
}

/**
 * The browser session gave `clientId` tokens (the code exchange): when it ends, the client is told
 * (back-channel and front-channel logout), even after those tokens expired.
 */
export async function recordBrowserSessionClient(
  tx: DbOrTx,
  browserSessionId: string,
  clientId: string,
): Promise<void> {
  await tx.insert(oidcBrowserSessionClients).values({ browserSessionId, clientId }).onConflictDoNothing();
}

/**
 * Front-Channel Logout 1.0 §3: the clients with a front-channel URI that the browser sessions `ids`
 * gave tokens to, read before they end (the signed-out page frames them).
 */
export async function frontchannelClients(
  app: AppContext,
  ids: string[],
): Promise<Array<{ sid: string; uri: string; sessionRequired: boolean; name: string }>> {
  if (ids.length === 0) return [];
  const rows = await app.db
    .select({
      sid: oidcBrowserSessionClients.browserSessionId,
      uri: oidcClients.frontchannelLogoutUri,
      sessionRequired: oidcClients.frontchannelLogoutSessionRequired,
      name: oidcClients.name,
    })
    .from(oidcBrowserSessionClients)
    .innerJoin(oidcClients, eq(oidcClients.clientId, oidcBrowserSessionClients.clientId))
    .where(and(inArray(oidcBrowserSessionClients.browserSessionId, ids), isNotNull(oidcClients.frontchannelLogoutUri)));
  return rows.map((r) => ({ sid: r.sid, uri: r.uri!, sessionRequired: r.sessionRequired, name: r.name }));
}

/** A user's browser sessions end with its other sessions (password changed or reset, user disabled or deleted). */
export async function endUserBrowserSessions(app: AppContext, tx: DbOrTx, userUuid: string): Promise<void> {
  await noticeBrowserSessionsEnding(app, tx, eq(oidcBrowserSessions.userUuid, userUuid));
  await tx.delete(oidcBrowserSessions).where(eq(oidcBrowserSessions.userUuid, userUuid));
}

/** Cleanup: expired browser sessions. */
export async function purgeBrowserSessions(app: AppContext): Promise<number> {
  const deleted = await app.db
    .delete(oidcBrowserSessions)
    .where(lt(oidcBrowserSessions.expiresAt, new Date()))
    .returning({ id: oidcBrowserSessions.id });
  return deleted.length;
}
