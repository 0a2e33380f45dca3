// OpenID Connect Back-Channel Logout 1.0: when a session that gave a client tokens ends, the client
// is told by a signed logout token (§2.4) POSTed to its `backchannel_logout_uri` (§2.5).
//
// Every end of a session passes here (`noticeLogouts`, the one hook), from the functions that end
// them: revokeSessions (auth/sessions.ts: RP-initiated logout, DELETE of a session or a token, the
// session cap, a replayed code, a password change, a user disabled or deleted, SCIM deactivation —
// which call it), the end of a browser session (browser-session.ts: every client signed in through
// it, with its `sid`), and the end of a refresh token family (auth/refresh-tokens.ts). Expiry tells
// nobody: a token that expires was given with its lifetime.
//
// The notice is recorded in the transaction that ends the session (the durable delivery queue,
// outbound/delivery-queue.ts) and sent after it commits, with retries: a slow or dead client never
// delays the logout, and a rolled-back change tells nobody. The token is built at each attempt
// (fresh `iat`, `exp` and `jti`), signed with the provider's current key of the client's algorithm,
// so a key rotation between attempts is followed. The client is read at each attempt too: one that
// was deleted or whose URI was removed meanwhile is not called.
import { randomUUID } from "node:crypto";
import { eq, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { execRows, type DbOrTx } from "../../db/index.ts";
import { oidcBrowserSessionClients, oidcBrowserSessions, oidcClients, refreshTokens } from "../../db/schema.ts";
import { enqueueDelivery, registerDeliveryKind, type DeliveryContext } from "../outbound/delivery-queue.ts";
import { signingKey, type SigningAlg } from "./keys.ts";

export const BACKCHANNEL_LOGOUT_KIND = "oidc_backchannel_logout";
/** §2.4 `events`: the member that makes a JWT a logout token. */
export const BACKCHANNEL_LOGOUT_EVENT = "http://schemas.openid.net/event/backchannel-logout";
/** §2.4: "a short time"; each attempt makes a new one. */
export const LOGOUT_TOKEN_LIFETIME_SECONDS = 120;

/** A client to tell that `userUuid`'s session (`sid`, when it came through a browser session) ended. */
export interface LogoutNotice {
  clientId: string;
  /** The client's tenant (the delivery's). */
  tenantUuid: string;
  userUuid: string;
  sid: string | null;
}

/** What is stored with the delivery (no secret: every value here is in the ID tokens the client holds). */
interface LogoutPayload {
  iss: string;
  client_id: string;
  sub: string;
  sid: string | null;
}

/**
 * A logout token names the issuer, and is sent after the request that ended the session: the issuer
 * is `public_url`'s (discovery.ts `issuerOf`, which cannot be imported here without an import
 * circle). Without `public_url` there is no issuer to name: back-channel logout is off, and
 * discovery says so (`backchannel_logout_supported: false`).
 */
export function backchannelIssuer(app: AppContext): string | null {
  const base = app.config.public_url;
  return base ? `${base.replace(/\/+$/, "")}/0.1/oidc` : null;
}

/** The notices already recorded by a transaction: one logout token per client, user and `sid`. */
const recorded = new WeakMap<object, Set<string>>();

/** The one hook: records a logout token delivery for each notice, in the transaction `tx`. */
export async function noticeLogouts(app: AppContext, tx: DbOrTx, notices: LogoutNotice[]): Promise<void> {
  if (notices.length === 0) return;
  const iss = backchannelIssuer(app);
  if (!iss) return;
  // Outside a transaction (the database itself), only this call's duplicates are dropped.
  let seen = tx === app.db ? new Set<string>() : recorded.get(tx);
  if (!seen) recorded.set(tx, (seen = new Set()));
  for (const n of notices) {
    const key = `${n.clientId} ${n.userUuid} ${n.sid ?? ""}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const payload: LogoutPayload = { iss, client_id: n.clientId, sub: n.userUuid, sid: n.sid };
    await enqueueDelivery(tx, {
      kind: BACKCHANNEL_LOGOUT_KIND,
      ownerKey: `oidc_client:${n.clientId}`,
      orderingKey: null,
      payload,
      tenantUuid: n.tenantUuid,
    });
  }
}

/**
 * For revokeSessions' statement (auth/sessions.ts): a column that lists, for the deleted session
 * `sessionUuid` (a column of the statement), the clients with a back-channel URI that it gave an
 * access token to, with the user and the `sid` of the browser session it came through (the code's) —
 * read in the statement that deletes them, which still sees the rows the deletion cascades to. Null
 * when back-channel logout is off (no column).
 */
export function sessionNoticesColumn(app: AppContext, sessionUuid: SQL): SQL | null {
  if (!backchannelIssuer(app)) return null;
  return sql`(select json_agg(json_build_object('client_id', a.client_id, 'tenant_uuid', cl.tenant_uuid,
      'user_uuid', a.user_uuid,
      'sid', (select c.browser_session_id from tessera_oidc_code c
              where c.session_uuid = a.session_uuid and c.browser_session_id is not null limit 1)))
    from tessera_oidc_access_token a join tessera_oidc_client cl on cl.client_id = a.client_id
    where a.session_uuid = ${sessionUuid} and a.user_uuid is not null and cl.backchannel_logout_uri is not null)`;
}

/** The notices of `sessionNoticesColumn`'s value (JSON, parsed or not by the driver). */
export function sessionNotices(value: unknown): LogoutNotice[] {
  if (value == null) return [];
  const list = (typeof value === "string" ? JSON.parse(value) : value) as Array<Record<string, string | null>>;
  return list.map((r) => ({
    clientId: r.client_id!,
    tenantUuid: r.tenant_uuid!,
    userUuid: r.user_uuid!,
    sid: r.sid ?? null,
  }));
}

/** Before the browser sessions `which` selects end: every client signed in through them (§2.7: with `sid`). */
export async function noticeBrowserSessionsEnding(app: AppContext, tx: DbOrTx, which: SQL): Promise<void> {
  if (!backchannelIssuer(app)) return;
  const rows = await tx
    .select({
      clientId: oidcClients.clientId,
      tenantUuid: oidcClients.tenantUuid,
      userUuid: oidcBrowserSessions.userUuid,
      sid: oidcBrowserSessions.id,
    })
    .from(oidcBrowserSessionClients)
    .innerJoin(oidcBrowserSessions, eq(oidcBrowserSessions.id, oidcBrowserSessionClients.browserSessionId))
    .innerJoin(oidcClients, eq(oidcClients.clientId, oidcBrowserSessionClients.clientId))
    .where(sql`${which} and ${oidcClients.backchannelLogoutUri} is not null`);
  await noticeLogouts(app, tx, rows);
}

/**
 * Before the refresh token families `which` selects end: their clients (an OIDC client's family is
 * the user's offline grant to it; no browser session: `sub` only, every session of the user there).
 */
export async function noticeFamiliesEnding(app: AppContext, tx: DbOrTx, which: SQL): Promise<void> {
  if (!backchannelIssuer(app)) return;
  const rows = await execRows<{ client_id: string; tenant_uuid: string; user_uuid: string }>(
    tx,
    sql`select cl.client_id, cl.tenant_uuid, ${refreshTokens.userUuid} as user_uuid
        from ${refreshTokens} join tessera_oidc_client cl on cl.client_id = ${refreshTokens.clientId}
        where ${which} and cl.backchannel_logout_uri is not null`,
  );
  await noticeLogouts(
    app,
    tx,
    rows.map((r) => ({ clientId: r.client_id, tenantUuid: r.tenant_uuid, userUuid: r.user_uuid, sid: null })),
  );
}

/**
 * §2.4: the logout token — `iss`, `aud` (the client), `iat`, `exp`, `jti`, `events`, `sub` and,
 * when the session came through a browser session, `sid`; never a `nonce` (§2.4: it would let it
 * pass for an ID token); `typ: logout+jwt` (§2.4, RFC 8725 §3.11), signed as the client's ID tokens.
 */
export async function signLogoutToken(
  app: AppContext,
  client: { clientId: string; idTokenSignedResponseAlg: string },
  p: { iss: string; sub: string; sid: string | null },
): Promise<string> {
  const alg = client.idTokenSignedResponseAlg as SigningAlg;
  const key = await signingKey(app, alg);
  const { SignJWT } = await import("jose");
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = { events: { [BACKCHANNEL_LOGOUT_EVENT]: {} } };
  if (p.sid) claims.sid = p.sid;
  return new SignJWT(claims)
    .setProtectedHeader({ alg, kid: key.kid, typ: "logout+jwt" })
    .setIssuer(p.iss)
    .setSubject(p.sub)
    .setAudience(client.clientId)
    .setIssuedAt(now)
    .setExpirationTime(now + LOGOUT_TOKEN_LIFETIME_SECONDS)
    .setJti(randomUUID())
    .sign(key.privateKey);
}

/** §2.5: `logout_token` in a form body, to the client's URI as it is now (none: nothing to send). */
async function prepare(payload: unknown, ctx: DeliveryContext) {
  const p = payload as LogoutPayload;
  const [client] = await ctx.app.db.select().from(oidcClients).where(eq(oidcClients.clientId, p.client_id));
  if (!client?.backchannelLogoutUri) return null;
  const token = await signLogoutToken(ctx.app, client, p);
  return {
    url: client.backchannelLogoutUri,
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ logout_token: token }).toString(),
  };
}

registerDeliveryKind(BACKCHANNEL_LOGOUT_KIND, {
  prepare,
  // Still failing after outbound_delivery.max_age_seconds: the operator hears of it (never the token).
  async onGaveUp(delivery, { app }) {
    const p = delivery.payload as LogoutPayload;
    app.log.warn("OIDC back-channel logout given up: the client never accepted the logout token", {
      client_id: p.client_id,
      user_uuid: p.sub,
      attempts: delivery.attempts,
      last_status_code: delivery.lastStatusCode,
      last_error: delivery.lastError,
    });
  },
});
