// Refresh tokens (wazo-auth's refresh tokens): one per (user, client_id), created by offline logins.
// A non-mobile re-login reuses it; a mobile one rotates it and purges the user's other mobile
// refresh tokens with the sessions issued from them ("one active mobile client per user").
import { and, eq, ne, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { refreshTokens, sessions, tokens } from "../../db/schema.ts";
import { publishEvent, routingKey, type BusEvent } from "../events.ts";
import { revokeSessions, revokeUserSessions } from "./sessions.ts";
import { endUserBrowserSessions } from "../oidc/browser-session.ts";
import { noticeFamiliesEnding } from "../oidc/backchannel.ts";
import { isUuid } from "../../domain/validate.ts";
import { effectiveMethod } from "./identity-providers.ts";
import { findLoginUser } from "./user-auth.ts";
import type { LoginArgs } from "../../plugins/types.ts";

export interface NewRefreshToken {
  userUuid: string;
  clientId: string;
  backend: string;
  login: string;
  userAgent: string;
  remoteAddr: string;
  mobile: boolean;
  metadata: Record<string, unknown>;
  tenantUuid: string;
}

export interface RefreshTokenOutcome {
  uuid: string;
  sessionsRevoked: number;
}

type RefreshTokenRow = typeof refreshTokens.$inferSelect;

export function refreshTokenEvent(
  kind: "created" | "deleted",
  rt: Pick<RefreshTokenRow, "clientId" | "mobile" | "userUuid">,
  tenantUuid: string,
): BusEvent {
  return {
    name: `auth_refresh_token_${kind}`,
    routingKey: routingKey(`auth.users.{user_uuid}.tokens.{client_id}.${kind}`, {
      user_uuid: rt.userUuid,
      client_id: rt.clientId,
    }),
    data: { client_id: rt.clientId, mobile: rt.mobile, user_uuid: rt.userUuid, tenant_uuid: tenantUuid },
    tenantUuid,
    userUuid: rt.userUuid,
    aggregate: `user:${rt.userUuid}`,
  };
}

export async function issueRefreshToken(app: AppContext, tx: DbOrTx, n: NewRefreshToken): Promise<RefreshTokenOutcome> {
  let revoked = 0;
  const [existing] = await tx
    .select()
    .from(refreshTokens)
    .where(and(eq(refreshTokens.userUuid, n.userUuid), eq(refreshTokens.clientId, n.clientId)));
  if (existing && !n.mobile) return { uuid: existing.uuid, sessionsRevoked: 0 };
  if (existing) revoked += await purgeRefreshToken(app, tx, existing, n.tenantUuid);
  if (n.mobile) {
    const others = await tx
      .select()
      .from(refreshTokens)
      .where(
        and(
          eq(refreshTokens.userUuid, n.userUuid),
          eq(refreshTokens.mobile, true),
          ne(refreshTokens.clientId, n.clientId),
        ),
      );
    for (const other of others) revoked += await purgeRefreshToken(app, tx, other, n.tenantUuid);
  }
  const [row] = await tx
    .insert(refreshTokens)
    .values({
      clientId: n.clientId,
      userUuid: n.userUuid,
      backend: n.backend,
      login: n.login,
      userAgent: n.userAgent,
      remoteAddr: n.remoteAddr,
      mobile: n.mobile,
      metadata: n.metadata,
    })
    .returning();
  await publishEvent(app, tx, refreshTokenEvent("created", row!, n.tenantUuid));
  return { uuid: row!.uuid, sessionsRevoked: revoked };
}

/** Deletes a refresh token and every session issued from it; returns the number of sessions. */
export async function purgeRefreshToken(
  app: AppContext,
  tx: DbOrTx,
  rt: RefreshTokenRow,
  tenantUuid: string,
): Promise<number> {
  const revoked = await revokeSessions(
    app,
    tx,
    sql`${sessions.uuid} in (select ${tokens.sessionUuid} from ${tokens} where ${tokens.refreshTokenUuid} = ${rt.uuid})`,
  );
  await noticeFamiliesEnding(app, tx, eq(refreshTokens.uuid, rt.uuid));
  await tx.delete(refreshTokens).where(eq(refreshTokens.uuid, rt.uuid));
  await publishEvent(app, tx, refreshTokenEvent("deleted", rt, tenantUuid));
  return revoked.length;
}

/**
 * Ends what a user holds when its password changes, is reset or removed, or the user is disabled:
 * every session (with its tokens), and every refresh token — so an attacker's offline login does
 * not outlive the reset meant to end it, nor a disabled user's outlive its re-enabling — each with
 * its event, as the revocation routes publish them. `compatibility.refresh_token_revocation: keep` keeps
 * the refresh tokens, as wazo-auth did before its 2025 releases (§5.6).
 */
export async function revokeUserAccess(
  app: AppContext,
  tx: DbOrTx,
  user: { uuid: string; tenantUuid: string },
): Promise<void> {
  await revokeUserSessions(app, tx, user.uuid);
  // The login page's single sign-on ends too: it would otherwise sign the user in again.
  await endUserBrowserSessions(app, tx, user.uuid);
  if (app.config.compatibility.refresh_token_revocation === "keep") return;
  await noticeFamiliesEnding(app, tx, eq(refreshTokens.userUuid, user.uuid));
  const deleted = await tx.delete(refreshTokens).where(eq(refreshTokens.userUuid, user.uuid)).returning();
  for (const rt of deleted) await publishEvent(app, tx, refreshTokenEvent("deleted", rt, user.tenantUuid));
}

/**
 * What a refresh-token login needs: the login, persistent metadata and the user's method (enabled
 * users only). The user is read as a login reads it, kept on `args` (the login's MFA rule reads it).
 */
export async function findRefreshTokenLogin(
  app: AppContext,
  refreshToken: string,
  clientId: string,
  args?: LoginArgs,
): Promise<{ uuid: string; login: string; metadata: Record<string, unknown>; method: string } | null> {
  if (!isUuid(refreshToken)) return null;
  const [rt] = await app.db
    .select()
    .from(refreshTokens)
    .where(and(eq(refreshTokens.uuid, refreshToken.toLowerCase()), eq(refreshTokens.clientId, clientId)));
  if (!rt?.login) return null;
  const user = await findLoginUser(app.db, rt.login, args);
  if (!user || user.uuid !== rt.userUuid) return null;
  return {
    uuid: rt.uuid,
    login: rt.login,
    metadata: (rt.metadata as Record<string, unknown>) ?? {},
    method: await effectiveMethod(app.db, user.authenticationMethod, user.tenantUuid),
  };
}
