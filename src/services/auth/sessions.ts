// Session revocation, shared by every path that ends sessions (token revoke, logout, password
// change, user disabled or deleted, mobile refresh-token purge, expiry): one delete, one event per
// session, cached tokens evicted once committed.
import { and, eq, inArray, ne, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { sessions, tokens } from "../../db/schema.ts";
import { afterCommit, inTransaction } from "../../db/tx.ts";
import { deleteTokens } from "./tokens.ts";
import { publishEvents, sessionDeletedEvent } from "../events.ts";
import { isUuid } from "../../domain/validate.ts";

export interface RevokedSession {
  uuid: string;
  tenantUuid: string;
  userUuid: string | null;
}

/** Deletes the sessions matching `where` (and, by cascade, their tokens); returns them. */
export async function revokeSessions(app: AppContext, tx: DbOrTx, where: SQL): Promise<RevokedSession[]> {
  const owners = await tx
    .select({ sessionUuid: tokens.sessionUuid, authId: tokens.authId })
    .from(tokens)
    .innerJoin(sessions, eq(tokens.sessionUuid, sessions.uuid))
    .where(where);
  const authIdBySession = new Map(owners.map((o) => [o.sessionUuid, o.authId]));
  const deleted = await tx
    .delete(sessions)
    .where(where)
    .returning({ uuid: sessions.uuid, tenantUuid: sessions.tenantUuid });
  const revoked = deleted.map((s) => {
    const authId = authIdBySession.get(s.uuid) ?? null;
    return { uuid: s.uuid, tenantUuid: s.tenantUuid, userUuid: authId && isUuid(authId) ? authId : null };
  });
  await publishEvents(app, tx, revoked.map(sessionDeletedEvent));
  afterCommit(tx, () => app.tokenCache.evictSessions(revoked.map((s) => s.uuid)));
  return revoked;
}

/** Sessions whose token belongs to `userUuid`. */
export function sessionsOfUser(userUuid: string): SQL {
  return sql`${sessions.uuid} in (select ${tokens.sessionUuid} from ${tokens} where ${tokens.authId} = ${userUuid})`;
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

/** DELETE /token/{t}: the token goes, with its session when no other token uses that session. */
export async function revokeToken(app: AppContext, tokenUuid: string): Promise<void> {
  await inTransaction(app, async (tx) => {
    const rows = await tx
      .select({ sessionUuid: tokens.sessionUuid })
      .from(tokens)
      .where(eq(tokens.uuid, tokenUuid))
      .limit(1);
    const sessionUuid = rows[0]?.sessionUuid;
    if (!sessionUuid) return;
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
