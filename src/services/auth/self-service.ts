// What the account page shows and changes about the signed-in user's own access (issue 43): the
// devices signed in (the user's sessions: end one, or every other), the applications the user
// allowed on the consent screen (OIDC Core §3.1.2.4; withdrawing one forgets the consent and ends
// its refresh tokens, so the application must ask again), and the user's language. Each change is
// audited with the user as actor, and evented like the same change through the REST API.
import { and, asc, eq, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { oidcClients, oidcConsents, refreshTokens, sessions, tokens, users } from "../../db/schema.ts";
import { execRows } from "../../db/index.ts";
import { inTransaction } from "../../db/tx.ts";
import { type AuditActor, changesOf, recordAudit } from "../audit/record.ts";
import { publishEvent } from "../events.ts";
import { publishUserEvent } from "../identity/users.ts";
import type { UserRow } from "../identity/visibility.ts";
import { refreshTokenEvent } from "./refresh-tokens.ts";
import { revokeSessions, sessionsOfUser } from "./sessions.ts";

export interface OwnSession {
  uuid: string;
  userAgent: string;
  createdAt: Date;
  mobile: boolean;
}

/** The user's sessions, oldest first: a session's age is its first token's, its device its last token's. */
export async function ownSessions(app: AppContext, userUuid: string): Promise<OwnSession[]> {
  const rows = await execRows<{ uuid: string; user_agent: string | null; issued: number; mobile: boolean }>(
    app.db,
    sql`select s.uuid, s.mobile, min(t.issued_t) as issued,
          (array_agg(t.user_agent order by t.issued_t desc))[1] as user_agent
        from ${sessions} s join ${tokens} t on t.session_uuid = s.uuid
        where t.auth_id = ${userUuid}
        group by s.uuid, s.mobile order by min(t.issued_t), s.uuid limit 100`,
  );
  return rows.map((r) => ({
    uuid: r.uuid,
    userAgent: r.user_agent ?? "",
    createdAt: new Date(Number(r.issued) * 1000),
    mobile: r.mobile,
  }));
}

/** Ends the user's sessions `which` names (one, or all but `keep`); returns how many ended. */
export async function endOwnSessions(
  app: AppContext,
  user: UserRow,
  which: { one: string } | { allBut: string },
  actor: AuditActor,
): Promise<number> {
  return inTransaction(app, async (tx) => {
    const where =
      "one" in which
        ? and(eq(sessions.uuid, which.one), sessionsOfUser(user.uuid))!
        : and(sql`${sessions.uuid} <> ${which.allBut}`, sessionsOfUser(user.uuid))!;
    const revoked = await revokeSessions(app, tx, where);
    for (const r of revoked)
      await recordAudit(app, tx, actor, {
        action: "session.delete",
        target: { kind: "session", uuid: r.uuid, tenantUuid: r.tenantUuid },
        changes: changesOf({ user_uuid: r.userUuid }, null),
      });
    return revoked.length;
  });
}

export interface OwnConsent {
  clientId: string;
  name: string;
  scopes: string[];
}

export async function ownConsents(app: AppContext, userUuid: string): Promise<OwnConsent[]> {
  const rows = await app.db
    .select({ clientId: oidcConsents.clientId, name: oidcClients.name, scopes: oidcConsents.scopes })
    .from(oidcConsents)
    .innerJoin(oidcClients, eq(oidcClients.clientId, oidcConsents.clientId))
    .where(eq(oidcConsents.userUuid, userUuid))
    .orderBy(asc(oidcClients.name), asc(oidcConsents.clientId));
  return rows;
}

/**
 * Withdraws the user's consent to `clientId`: the consent is forgotten (the next authorization asks
 * again) and the user's refresh tokens for that client end (with their OIDC refresh tokens, by
 * cascade). Returns the client's name, or null when there was no such consent.
 */
export async function withdrawConsent(
  app: AppContext,
  user: UserRow,
  clientId: string,
  actor: AuditActor,
): Promise<string | null> {
  return inTransaction(app, async (tx) => {
    const [gone] = await tx
      .delete(oidcConsents)
      .where(and(eq(oidcConsents.userUuid, user.uuid), eq(oidcConsents.clientId, clientId)))
      .returning();
    if (!gone) return null;
    const [client] = await tx
      .select({ name: oidcClients.name })
      .from(oidcClients)
      .where(eq(oidcClients.clientId, clientId));
    await recordAudit(app, tx, actor, {
      action: "oidc_consent.delete",
      target: { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid },
      changes: changesOf({ client_id: clientId, scopes: gone.scopes }, null),
    });
    const deleted = await tx
      .delete(refreshTokens)
      .where(and(eq(refreshTokens.userUuid, user.uuid), eq(refreshTokens.clientId, clientId)))
      .returning();
    for (const rt of deleted) {
      await publishEvent(app, tx, refreshTokenEvent("deleted", rt, user.tenantUuid));
      await recordAudit(app, tx, actor, {
        action: "refresh_token.delete",
        target: { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid },
        changes: changesOf({ client_id: rt.clientId }, null),
      });
    }
    return client?.name ?? clientId;
  });
}

/** The user's own language (a canonical BCP 47 tag, or null: none chosen). */
export async function setOwnLocale(app: AppContext, user: UserRow, locale: string | null, actor: AuditActor) {
  await inTransaction(app, async (tx) => {
    const [row] = await tx.update(users).set({ locale }).where(eq(users.uuid, user.uuid)).returning();
    if (!row) return;
    await publishUserEvent(app, tx, "updated", row);
    await recordAudit(app, tx, actor, {
      action: "user.update",
      target: { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid },
      changes: [{ field: "locale", old: user.locale ?? null, new: locale }],
    });
  });
}
