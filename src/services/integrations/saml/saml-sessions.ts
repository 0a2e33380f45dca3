// SAML sessions in the database (auth_saml_session), so any instance may take the IdP's post:
// a pending login (login null) from POST /saml/sso until the ACS, a completed login (login set)
// until POST /token consumes it, and a pending logout (relay state `logout:…`) until /saml/sls.
import { createHash, randomBytes } from "node:crypto";
import { and, eq, gte, isNotNull, isNull, lt, or, sql } from "drizzle-orm";
import type { AppContext } from "../../../boot/context.ts";
import { samlLogins, samlSessions } from "../../../db/schema.ts";

export type SamlSessionRow = typeof samlSessions.$inferSelect;

/** What the IdP said about the user, kept for the SAML logout. */
export interface SamlNameId {
  value: string;
  format: string | null;
  sessionIndex: string | null;
  nameQualifier: string | null;
  spNameQualifier: string | null;
}

/** 22 url-safe characters (128 random bits), wazo-auth's saml_session_id format. */
export const newSessionId = () => randomBytes(16).toString("base64url");

/** wazo-auth's relay state of a login: base64url(SHA-256(saml_session_id)). */
export const loginRelayState = (sessionId: string) => createHash("sha256").update(sessionId).digest("base64url");

export const LOGOUT_RELAY_PREFIX = "logout:";

export async function insertSamlSession(app: AppContext, row: typeof samlSessions.$inferInsert): Promise<void> {
  await app.db.insert(samlSessions).values(row);
}

/** A pending login (not yet answered by the IdP) by its relay state. */
export async function pendingLoginByRelayState(app: AppContext, relayState: string): Promise<SamlSessionRow | null> {
  if (relayState.startsWith(LOGOUT_RELAY_PREFIX)) return null;
  const [row] = await app.db
    .select()
    .from(samlSessions)
    .where(and(eq(samlSessions.relayState, relayState), isNull(samlSessions.login)))
    .limit(1);
  return row ?? null;
}

export async function pendingLogoutByRelayState(app: AppContext, relayState: string): Promise<SamlSessionRow | null> {
  if (!relayState.startsWith(LOGOUT_RELAY_PREFIX)) return null;
  const [row] = await app.db.select().from(samlSessions).where(eq(samlSessions.relayState, relayState)).limit(1);
  return row ?? null;
}

/** Records the IdP's answer; false when another post already answered this request (a replay). */
export async function completeLogin(
  app: AppContext,
  s: SamlSessionRow,
  login: string,
  nameId: SamlNameId,
): Promise<boolean> {
  const updated = await app.db
    .update(samlSessions)
    .set({ login, samlNameId: JSON.stringify(nameId) })
    .where(
      and(eq(samlSessions.requestId, s.requestId), eq(samlSessions.sessionId, s.sessionId), isNull(samlSessions.login)),
    )
    .returning({ id: samlSessions.requestId });
  return updated.length === 1;
}

export async function deleteSamlSession(app: AppContext, s: SamlSessionRow): Promise<void> {
  await app.db
    .delete(samlSessions)
    .where(and(eq(samlSessions.requestId, s.requestId), eq(samlSessions.sessionId, s.sessionId)));
}

/**
 * POST /token with saml_session_id: takes the completed login, once. The row is deleted in the
 * same statement that reads it, so two concurrent logins cannot both use it.
 */
export async function consumeCompletedLogin(app: AppContext, sessionId: string): Promise<SamlSessionRow | null> {
  const since = new Date(Date.now() - app.config.saml.saml_session_lifetime_seconds * 1000);
  const [row] = await app.db
    .delete(samlSessions)
    .where(
      and(
        eq(samlSessions.sessionId, sessionId),
        isNotNull(samlSessions.login),
        sql`${samlSessions.relayState} not like ${`${LOGOUT_RELAY_PREFIX}%`}`,
        gte(samlSessions.startTime, since),
      ),
    )
    .returning();
  return row ?? null;
}

export function parseNameId(text: string | null): SamlNameId | null {
  if (!text) return null;
  try {
    const v = JSON.parse(text) as SamlNameId;
    return typeof v.value === "string" ? v : null;
  } catch {
    return null;
  }
}

/** Cleanup job: sessions past `saml_session_lifetime_seconds`, and pending logins past the login timeout. */
export async function purgeSamlSessions(app: AppContext): Promise<number> {
  const { saml_session_lifetime_seconds: lifetime, saml_login_timeout_seconds: timeout } = app.config.saml;
  const old = new Date(Date.now() - lifetime * 1000);
  const stale = new Date(Date.now() - timeout * 1000);
  const deleted = await app.db
    .delete(samlSessions)
    .where(or(lt(samlSessions.startTime, old), and(isNull(samlSessions.login), lt(samlSessions.startTime, stale))))
    .returning({ id: samlSessions.requestId });
  await app.db.delete(samlLogins).where(lt(samlLogins.createdAt, old));
  return deleted.length;
}
