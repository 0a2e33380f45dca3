// Session revocation, shared by every path that ends sessions (token revoke, logout, password
// change, user disabled or deleted, mobile refresh-token purge, expiry): one delete, one event per
// session, cached tokens evicted once committed, and the OpenID Connect clients the sessions gave
// tokens to told (back-channel logout, oidc/backchannel.ts), except at expiry.
import { and, eq, inArray, ne, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { execRows, type DbOrTx } from "../../db/index.ts";
import { sessions, tokens } from "../../db/schema.ts";
import { afterCommit, inTransaction } from "../../db/tx.ts";
import { deleteTokens } from "./tokens.ts";
import { publishEvents, sessionDeletedEvent } from "../events.ts";
import { isUuid } from "../../domain/validate.ts";
import { recordAudit } from "../audit/record.ts";
import { noticeLogouts, sessionNotices, sessionNoticesColumn } from "../oidc/backchannel.ts";

export interface RevokedSession {
  uuid: string;
  tenantUuid: string;
  userUuid: string | null;
}

/**
 * Deletes the sessions matching `where` (and, by cascade, their tokens); returns them. One statement
 * whatever the number of sessions (the expiry purge ends thousands per batch): the delete returns
 * them and its outer select reads each one's user from the tokens it still sees (the cascade runs at
 * the statement's end), instead of a select sending every session uuid back as a parameter.
 */
export async function revokeSessions(
  app: AppContext,
  tx: DbOrTx,
  where: SQL,
  opts: { expired?: boolean } = {},
): Promise<RevokedSession[]> {
  // The clients to tell, read by the same statement (it still sees what the deletion cascades to).
  const notices = opts.expired ? null : sessionNoticesColumn(app, sql`gone.uuid`);
  const deleted = await execRows<{ uuid: string; tenant_uuid: string; auth_id: string | null; logout?: unknown }>(
    tx,
    sql`with gone as (delete from ${sessions} where ${where} returning ${sessions.uuid}, ${sessions.tenantUuid})
        select gone.uuid, gone.tenant_uuid,
          (select t.auth_id from ${tokens} t where t.session_uuid = gone.uuid limit 1) as auth_id
          ${notices ? sql`, ${notices} as logout` : sql``}
        from gone`,
  );
  if (notices)
    await noticeLogouts(
      app,
      tx,
      deleted.flatMap((s) => sessionNotices(s.logout)),
    );
  const revoked = deleted.map((s) => ({
    uuid: s.uuid,
    tenantUuid: s.tenant_uuid,
    userUuid: s.auth_id && isUuid(s.auth_id) ? s.auth_id : null,
  }));
  await publishEvents(app, tx, revoked.map(sessionDeletedEvent));
  afterCommit(tx, () => app.tokenCache.evictSessions(revoked.map((s) => s.uuid)));
  return revoked;
}

/** Sessions whose token belongs to `userUuid`. */
export function sessionsOfUser(userUuid: string): SQL {
  return sql`${sessions.uuid} in (select ${tokens.sessionUuid} from ${tokens} where ${tokens.authId} = ${userUuid})`;
}

/** The `count` oldest sessions of `userUuid`, a session's age being its first token's. */
export function oldestSessionsOf(userUuid: string, count: number): SQL {
  return sql`${sessions.uuid} in (select ${tokens.sessionUuid} from ${tokens} where ${tokens.authId} = ${userUuid}
    group by ${tokens.sessionUuid} order by min(${tokens.issuedT}), ${tokens.sessionUuid} limit ${count})`;
}

export function sessionByUuid(uuid: string): SQL {
  return eq(sessions.uuid, uuid);
}

export function sessionsByUuids(uuids: string[]): SQL {
  return inArray(sessions.uuid, uuids);
}

export async function revokeUserSessions(app: AppContext, tx: DbOrTx, userUuid: string): Promise<RevokedSession[]> {
  return revokeSessions(app, tx, sessionsOfUser(userUuid));
}

/**
 * DELETE /token/{t}: the token goes, with its session when no other token uses that session. With
 * `origin` (the route's call) the revocation is recorded, acted by the token's own user and session
 * — never the token's id, which is its secret.
 */
export async function revokeToken(
  app: AppContext,
  tokenUuid: string,
  origin?: { address: string; userAgent: string },
): Promise<void> {
  await inTransaction(app, async (tx) => {
    const rows = await tx
      .select({ sessionUuid: tokens.sessionUuid, authId: tokens.authId, tenantUuid: sessions.tenantUuid })
      .from(tokens)
      .innerJoin(sessions, eq(tokens.sessionUuid, sessions.uuid))
      .where(eq(tokens.uuid, tokenUuid))
      .limit(1);
    const sessionUuid = rows[0]?.sessionUuid;
    if (!sessionUuid) return;
    if (origin) {
      const userUuid = isUuid(rows[0]!.authId) ? rows[0]!.authId : null;
      const tenantUuid = rows[0]!.tenantUuid;
      await recordAudit(
        app,
        tx,
        { userUuid, sessionUuid, tenantUuid, ...origin },
        {
          action: "token.revoke",
          target: { kind: "session", uuid: sessionUuid, tenantUuid },
        },
      );
    }
    const siblings = await tx
      .select({ uuid: tokens.uuid })
      .from(tokens)
      .where(and(eq(tokens.sessionUuid, sessionUuid), ne(tokens.uuid, tokenUuid)))
      .limit(1);
    if (siblings.length === 0) await revokeSessions(app, tx, sessionByUuid(sessionUuid));
    else await deleteTokens(tx, [tokenUuid]);
    afterCommit(tx, () => app.tokenCache.evict(tokenUuid));
  });
}
