// Logout with a tenant's upstream OpenID provider (docs/federation.md "Logout"), both ways:
//   - Tessera → provider: a browser session that signed in through a provider with `upstream_logout`
//     is sent on, once Tessera ended its own sessions, to the provider's end_session_endpoint
//     (RP-Initiated Logout 1.0 §2), which sends it back to Tessera's post-logout redirect URI (§3),
//     and from there to Tessera's relying party (web/upstream-logout.ts);
//   - provider → Tessera: the provider's logout token (Back-Channel Logout 1.0 §2.4), verified as
//     §2.6 says, ends the Tessera browser sessions of that upstream session, and so every Tessera
//     session issued through them, by the path every logout takes (browser-session.ts: Tessera's
//     own relying parties are told in turn).
// Both need the upstream session behind a browser session (upstream-sessions.ts).
import { createHash, randomBytes } from "node:crypto";
import { and, desc, eq, gt, inArray, lt } from "drizzle-orm";
import { errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import type { AppContext } from "../../../boot/context.ts";
import {
  upstreamOidcLogouts,
  upstreamOidcProviders,
  upstreamOidcSessions,
  upstreamOidcTokenUses,
} from "../../../db/schema.ts";
import { inTransaction } from "../../../db/tx.ts";
import { recordAudit, SYSTEM_ACTOR } from "../../audit/record.ts";
import { revokeSessions, sessionsByUuids } from "../../auth/sessions.ts";
import { BACKCHANNEL_LOGOUT_EVENT } from "../../oidc/backchannel.ts";
import { endBrowserSession } from "../../oidc/browser-session.ts";
import { urlRefusal } from "../../outbound/fetch.ts";
import { policyOf, UpstreamUnavailable, upstreamKeys, upstreamMetadata } from "./discovery.ts";
import { findProvider, postLogoutRedirectUriOf, type ProviderRow } from "./providers.ts";
// The ID token's rules where a logout token's are the same (OIDC Back-Channel Logout 1.0 §2.6 items 3-5).
import { ALGORITHMS, CLOCK_TOLERANCE_SECONDS, expectedIssuer, UpstreamSignInRefused } from "./sign-in.ts";

const sha256 = (s: string) => createHash("sha256").update(s).digest("base64url");

/** How long the provider may keep the browser on its logout page before sending it back (§3). */
export const UPSTREAM_LOGOUT_SECONDS = 600;
/** Back-Channel Logout 1.0 §2.6 item 6 leaves "recent" to the receiver: older logout tokens are refused. */
const LOGOUT_TOKEN_MAX_AGE_SECONDS = 300;

/**
 * The provider a browser session logs out at (RP-Initiated Logout 1.0 §2): the latest sign-in of that
 * session through a provider configured for it, and the provider's end_session_endpoint — from its
 * discovery document only, through the outbound policy's URL checks (https; a tenant chose the
 * provider). Null when there is none. Tessera never calls the endpoint: the browser goes there.
 */
export async function upstreamLogoutEndpoint(
  app: AppContext,
  browserSessionId: string,
): Promise<{ provider: ProviderRow; idToken: string | null; endpoint: string } | null> {
  const [row] = await app.db
    .select({ session: upstreamOidcSessions, provider: upstreamOidcProviders })
    .from(upstreamOidcSessions)
    .innerJoin(upstreamOidcProviders, eq(upstreamOidcProviders.uuid, upstreamOidcSessions.providerUuid))
    .where(
      and(eq(upstreamOidcSessions.browserSessionId, browserSessionId), eq(upstreamOidcProviders.upstreamLogout, true)),
    )
    .orderBy(desc(upstreamOidcSessions.createdAt))
    .limit(1);
  if (!row) return null;
  const { provider, session } = row;
  let endpoint: string | undefined;
  try {
    endpoint = (await upstreamMetadata(app, provider.issuer, { templateIssuer: provider.preset === "entra" }))
      .end_session_endpoint;
  } catch (e) {
    if (!(e instanceof UpstreamUnavailable)) throw e;
    app.log.warn("upstream logout skipped: provider unreachable", { provider_uuid: provider.uuid, error: e.message });
    return null;
  }
  if (!endpoint) return null;
  const refusal = urlRefusal(endpoint, policyOf(app));
  if (refusal) {
    app.log.warn("upstream logout skipped: end_session_endpoint refused", { provider_uuid: provider.uuid, refusal });
    return null;
  }
  return { provider, idToken: session.idToken, endpoint };
}

/**
 * The URL to send the browser to, read before the browser session ends (its rows go with it): the
 * provider's end_session_endpoint with `id_token_hint`, `client_id`, Tessera's
 * `post_logout_redirect_uri` and a `state` (§2); null when the session does not log out upstream.
 * `continueUrl` (the relying party's validated post-logout redirect with its `state`) is kept under
 * that `state` for the way back.
 */
export async function upstreamLogoutLocation(
  app: AppContext,
  browserSessionId: string,
  tesseraIssuer: string,
  continueUrl: string | null,
  tenantUuid: string | null,
): Promise<string | null> {
  const found = await upstreamLogoutEndpoint(app, browserSessionId);
  if (!found) return null;
  const { provider, idToken, endpoint } = found;
  const state = randomBytes(32).toString("base64url");
  await app.db.delete(upstreamOidcLogouts).where(lt(upstreamOidcLogouts.expiresAt, new Date()));
  await app.db.insert(upstreamOidcLogouts).values({
    stateHash: sha256(state),
    providerUuid: provider.uuid,
    continueUrl,
    tenantUuid,
    expiresAt: new Date(Date.now() + UPSTREAM_LOGOUT_SECONDS * 1000),
  });
  const url = new URL(endpoint);
  if (idToken) url.searchParams.set("id_token_hint", idToken);
  url.searchParams.set("client_id", provider.clientId);
  url.searchParams.set("post_logout_redirect_uri", postLogoutRedirectUriOf(tesseraIssuer, provider.uuid));
  url.searchParams.set("state", state);
  return url.toString();
}

/** §3: back from the provider: where the logout continues (taken once), or null (the signed-out page). */
export async function finishUpstreamLogout(
  app: AppContext,
  providerUuid: string,
  state: string | undefined,
): Promise<{ continueUrl: string | null; tenantUuid: string | null } | null> {
  if (!state || state.length > 512) return null;
  const [row] = await app.db
    .delete(upstreamOidcLogouts)
    .where(
      and(
        eq(upstreamOidcLogouts.stateHash, sha256(state)),
        eq(upstreamOidcLogouts.providerUuid, providerUuid),
        gt(upstreamOidcLogouts.expiresAt, new Date()),
      ),
    )
    .returning();
  return row ? { continueUrl: row.continueUrl, tenantUuid: row.tenantUuid } : null;
}

/** A logout token refused (Back-Channel Logout 1.0 §2.8: 400); `reason` is logged, never a secret. */
export class LogoutTokenRefused extends Error {
  constructor(readonly reason: string) {
    super(`logout token refused: ${reason}`);
    this.name = "LogoutTokenRefused";
  }
}

/** Back-Channel Logout 1.0 §2.6: the checks of a logout token, before anything ends. */
async function verifyLogoutToken(app: AppContext, provider: ProviderRow, token: string): Promise<JWTPayload> {
  let metadata: Awaited<ReturnType<typeof upstreamMetadata>>;
  let keys: Awaited<ReturnType<typeof upstreamKeys>>;
  try {
    metadata = await upstreamMetadata(app, provider.issuer, { templateIssuer: provider.preset === "entra" });
    keys = await upstreamKeys(app, metadata.jwks_uri);
  } catch (e) {
    if (!(e instanceof UpstreamUnavailable)) throw e;
    throw new LogoutTokenRefused("unreachable");
  }
  let payload: JWTPayload;
  try {
    const issuer = expectedIssuer(provider, metadata, token);
    // Items 3-5: signature with the provider's keys, `iss`, `aud` (its client id), `iat` (recent), `exp` if present.
    ({ payload } = await jwtVerify(token, keys, {
      issuer,
      audience: provider.clientId,
      algorithms: ALGORITHMS,
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      maxTokenAge: LOGOUT_TOKEN_MAX_AGE_SECONDS,
      requiredClaims: ["iat", "jti"],
    }));
  } catch (e) {
    if (e instanceof UpstreamSignInRefused) throw new LogoutTokenRefused(e.reason);
    const reason =
      e instanceof joseErrors.JWTClaimValidationFailed
        ? `claim_${e.claim}`
        : e instanceof joseErrors.JWSSignatureVerificationFailed
          ? "signature"
          : ((e as { code?: string }).code ?? "invalid");
    throw new LogoutTokenRefused(reason);
  }
  // Item 7: `events` with the back-channel logout member, a JSON object.
  const events = payload.events as Record<string, unknown> | undefined;
  const event = events && typeof events === "object" ? events[BACKCHANNEL_LOGOUT_EVENT] : undefined;
  if (!event || typeof event !== "object" || Array.isArray(event)) throw new LogoutTokenRefused("events");
  // Item 8 (§2.4): never a `nonce`, which would let an ID token pass for a logout token and back.
  if (payload.nonce !== undefined) throw new LogoutTokenRefused("nonce");
  // Item 6 (§2.4): `sub`, `sid`, or both.
  const text = (v: unknown) => typeof v === "string" && v !== "" && v.length <= 255;
  if (!text(payload.sub) && !text(payload.sid)) throw new LogoutTokenRefused("sub_sid");
  if ((payload.sub !== undefined && !text(payload.sub)) || (payload.sid !== undefined && !text(payload.sid)))
    throw new LogoutTokenRefused("sub_sid");
  if (typeof payload.jti !== "string" || payload.jti.length > 255) throw new LogoutTokenRefused("jti");
  return payload;
}

/**
 * §2.6 item 10: a `jti` seen before is refused. Remembered in the database (every instance sees it), in
 * the table of used upstream ID tokens, until the token could no longer pass the `iat` check.
 */
async function firstUse(app: AppContext, provider: ProviderRow, payload: JWTPayload): Promise<boolean> {
  const until = Math.max(payload.exp ?? 0, (payload.iat ?? 0) + LOGOUT_TOKEN_MAX_AGE_SECONDS) + CLOCK_TOLERANCE_SECONDS;
  await app.db.delete(upstreamOidcTokenUses).where(lt(upstreamOidcTokenUses.expiresAt, new Date()));
  const [fresh] = await app.db
    .insert(upstreamOidcTokenUses)
    .values({
      tokenHash: sha256(`logout_jti ${provider.uuid} ${payload.iss} ${payload.jti}`),
      expiresAt: new Date(until * 1000),
    })
    .onConflictDoNothing()
    .returning();
  return fresh !== undefined;
}

/**
 * Back-Channel Logout 1.0 §2.5-§2.7: the provider `providerUuid` says its session ended. Verified
 * (§2.6), never twice; then the Tessera browser sessions of that upstream session — by `sid` (and `sub`
 * when given), or every one of `sub` at this provider when there is no `sid` — end, with every Tessera
 * session issued through them; only this provider's (a token of another provider never verifies here).
 * Returns how many browser sessions ended (none is still a success, §2.7). Throws LogoutTokenRefused.
 */
export async function receiveLogoutToken(app: AppContext, providerUuid: string, token: string): Promise<number> {
  const provider = await findProvider(app, providerUuid);
  if (!provider) throw new LogoutTokenRefused("unknown_provider");
  if (provider.provisioning === "off") throw new LogoutTokenRefused("provider_disabled");
  const payload = await verifyLogoutToken(app, provider, token);
  if (!(await firstUse(app, provider, payload))) throw new LogoutTokenRefused("replayed");
  const sub = payload.sub;
  const sid = typeof payload.sid === "string" ? payload.sid : null;
  const rows = await app.db
    .select()
    .from(upstreamOidcSessions)
    .where(
      and(
        eq(upstreamOidcSessions.providerUuid, provider.uuid),
        sid !== null ? eq(upstreamOidcSessions.sid, sid) : undefined,
        sub !== undefined ? eq(upstreamOidcSessions.subject, sub) : undefined,
      ),
    );
  const browserSessions = [...new Set(rows.map((r) => r.browserSessionId).filter((id): id is string => id !== null))];
  const sessionUuids = [...new Set(rows.map((r) => r.sessionUuid).filter((id): id is string => id !== null))];
  let ended = 0;
  // The path of every logout (browser-session.ts): its Tessera sessions revoked, its relying parties told.
  for (const id of browserSessions) {
    await endBrowserSession(app, id);
    ended++;
  }
  await inTransaction(app, async (tx) => {
    // The sign-in's own session, had it not come through a code (still awaiting consent), and sign-ins
    // not yet bound to a browser session: both end too.
    if (sessionUuids.length) await revokeSessions(app, tx, sessionsByUuids(sessionUuids));
    if (rows.length)
      await tx.delete(upstreamOidcSessions).where(
        inArray(
          upstreamOidcSessions.uuid,
          rows.map((r) => r.uuid),
        ),
      );
    await recordAudit(
      app,
      tx,
      { ...SYSTEM_ACTOR, tenantUuid: provider.tenantUuid },
      {
        action: "session.upstream_logout",
        target: { kind: "backend_oidc", uuid: provider.uuid, tenantUuid: provider.tenantUuid },
        changes: [{ field: "browser_sessions", old: null, new: String(ended) }],
      },
    );
  });
  app.log.info("upstream back-channel logout", {
    provider_uuid: provider.uuid,
    by: sid !== null ? "sid" : "sub",
    browser_sessions: ended,
  });
  return ended;
}
