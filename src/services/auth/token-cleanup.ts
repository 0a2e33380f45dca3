// wazo-auth's token expiry and cleanup: expired tokens are purged with their sessions in batches, and tokens
// expiring within one cleanup interval get one `auth_session_expire_soon` notice each.
import { and, eq, lt, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { oidcRefreshTokens, sessions, tokens } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { isUuid } from "../../domain/validate.ts";
import { publishEvents, routingKey, type BusEvent } from "../events.ts";
import { revokeSessions } from "./sessions.ts";

const now = () => Math.floor(Date.now() / 1000);

/**
 * Returns the number of sessions deleted. Each batch is one statement (revokeSessions): the
 * sessions of the `token_cleanup_batch_size` tokens expiring first, chosen by the database along
 * the expiry index, never sent back and forth as a list of uuids.
 */
export async function purgeExpiredTokens(app: AppContext): Promise<number> {
  let total = 0;
  for (;;) {
    const revoked = await purgeBatch(app);
    if (revoked === 0) return total;
    total += revoked;
  }
}

/**
 * The token's session is one an OpenID Connect refresh token continues, and that refresh token lives
 * (unrotated, unexpired): the session does not end with the token (for a query on auth_token).
 */
const keptByRefresh = sql`exists (select 1 from ${oidcRefreshTokens}
  where ${oidcRefreshTokens.sessionUuid} = ${tokens.sessionUuid} and ${oidcRefreshTokens.rotatedAt} is null
    and (${oidcRefreshTokens.expiresAt} is null or ${oidcRefreshTokens.expiresAt} > now()))`;

/**
 * One batch of the purge: the number of sessions it ended (0 when nothing has expired). A session an
 * OpenID Connect refresh token continues (services/oidc/grants/refresh-token.ts) outlives its access
 * tokens while that refresh token lives (unrotated, unexpired): the sign-in lasts as its refresh
 * token does, as an SSO session's idle time in other providers; it is passed over, not counted.
 */
export async function purgeBatch(app: AppContext): Promise<number> {
  const expiredFirst = sql`${sessions.uuid} in (select ${tokens.sessionUuid} from ${tokens}
    where ${tokens.expireT} < ${now()} and not ${keptByRefresh}
    order by ${tokens.expireT} limit ${app.config.token_cleanup_batch_size})`;
  return (await inTransaction(app, (tx) => revokeSessions(app, tx, expiredFirst, { expired: true }))).length;
}

/**
 * Claims tokens expiring within one interval (once each, whichever instance runs) and announces them;
 * not those whose session a live refresh token keeps (it does not end with them).
 */
export async function notifyExpiringSoon(app: AppContext): Promise<number> {
  const horizon = now() + Math.ceil(app.config.token_cleanup_interval);
  return inTransaction(app, async (tx) => {
    const claimed = await tx
      .update(tokens)
      .set({ expireSoonNotified: true })
      .where(and(lt(tokens.expireT, horizon), eq(tokens.expireSoonNotified, false), sql`not ${keptByRefresh}`))
      .returning({ sessionUuid: tokens.sessionUuid, authId: tokens.authId, metadata: tokens.metadata });
    const notices: BusEvent[] = [];
    for (const t of claimed) {
      const meta = safeJson(t.metadata);
      const tenantUuid = typeof meta.tenant_uuid === "string" ? meta.tenant_uuid : null;
      if (!tenantUuid) continue; // email/reset tokens carry no tenant: no notice (as wazo-auth)
      const userUuid = isUuid(t.authId) ? t.authId : null;
      notices.push({
        name: "auth_session_expire_soon",
        routingKey: routingKey("auth.users.{user_uuid}.sessions.{session_uuid}.expire_soon", {
          user_uuid: userUuid,
          session_uuid: t.sessionUuid,
        }),
        data: { uuid: t.sessionUuid, user_uuid: userUuid, tenant_uuid: tenantUuid },
        tenantUuid,
        userUuid,
        sessionUuid: t.sessionUuid,
        aggregate: `session:${t.sessionUuid}`,
      });
    }
    await publishEvents(app, tx, notices);
    return notices.length;
  });
}

function safeJson(text: string | null): Record<string, unknown> {
  try {
    return text ? (JSON.parse(text) ?? {}) : {};
  } catch {
    return {};
  }
}
