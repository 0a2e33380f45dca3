// The upstream session behind a Tessera browser session (docs/federation.md "Logout"): remembered
// when a sign-in through a provider completes (sign-in.ts), bound to the browser session it becomes
// (web/upstream-sign-in.ts); logout.ts reads it, both ways.
import { createHash } from "node:crypto";
import { and, eq, gt, isNull, lt } from "drizzle-orm";
import type { JWTPayload } from "jose";
import type { AppContext } from "../../../boot/context.ts";
import { upstreamOidcSessions } from "../../../db/schema.ts";
import type { ProviderRow } from "./providers.ts";

const sha256 = (s: string) => createHash("sha256").update(s).digest("base64url");

/**
 * A sign-in through `provider` completed (sign-in.ts): its upstream `sub` and `sid`, and — only when the
 * provider is configured for upstream logout — its ID token, the `id_token_hint` the provider's
 * end_session_endpoint wants (RP-Initiated Logout 1.0 §2). Pending until the browser session exists;
 * the ID token is deleted with that browser session (the row's cascade), or at `expiresAt` if the
 * sign-in never became one.
 */
export async function rememberUpstreamSession(
  app: AppContext,
  provider: ProviderRow,
  claims: JWTPayload,
  idToken: string,
  completion: string,
  expiresAt: Date,
): Promise<void> {
  await app.db
    .delete(upstreamOidcSessions)
    .where(and(isNull(upstreamOidcSessions.browserSessionId), lt(upstreamOidcSessions.expiresAt, new Date())));
  const sid = typeof claims.sid === "string" && claims.sid !== "" && claims.sid.length <= 255 ? claims.sid : null;
  await app.db.insert(upstreamOidcSessions).values({
    providerUuid: provider.uuid,
    subject: String(claims.sub),
    sid,
    idToken: provider.upstreamLogout ? idToken : null,
    completionHash: sha256(completion),
    expiresAt,
  });
}

/** The completed sign-in became the browser session `browserSessionId` (and the Tessera session `sessionUuid`). */
export function bindUpstreamSession(
  app: AppContext,
  completion: string,
  browserSessionId: string,
  sessionUuid: string,
): Promise<void> {
  return bindWaiting(app, sha256(completion), browserSessionId, sessionUuid);
}

/**
 * While the tenant's second step is pending, the upstream session waits under the key of that step's
 * stored row (services/oidc/mfa-sign-in.ts `handleHash`): the completion secret is spent by the login
 * before the step, and the browser session is made after it, in a later request. The key is read from
 * the stored row on both sides, never from the browser; prefixed so that it never meets a completion's.
 */
const stepKey = (stepHash: string) => `step:${stepHash}`;

/** The completed sign-in goes on to the second step (`stepHash`, until `expiresAt`): its upstream session waits for it. */
export async function awaitSecondStep(
  app: AppContext,
  completion: string,
  stepHash: string,
  expiresAt: Date,
): Promise<void> {
  await app.db
    .update(upstreamOidcSessions)
    .set({ completionHash: stepKey(stepHash), expiresAt })
    .where(
      and(eq(upstreamOidcSessions.completionHash, sha256(completion)), gt(upstreamOidcSessions.expiresAt, new Date())),
    );
}

/** The second step `stepHash` passed and became the browser session `browserSessionId`: bound as without a step. */
export function bindAfterSecondStep(
  app: AppContext,
  stepHash: string,
  browserSessionId: string,
  sessionUuid: string,
): Promise<void> {
  return bindWaiting(app, stepKey(stepHash), browserSessionId, sessionUuid);
}

async function bindWaiting(app: AppContext, key: string, browserSessionId: string, sessionUuid: string): Promise<void> {
  await app.db
    .update(upstreamOidcSessions)
    .set({ browserSessionId, sessionUuid, completionHash: null, expiresAt: null })
    .where(and(eq(upstreamOidcSessions.completionHash, key), gt(upstreamOidcSessions.expiresAt, new Date())));
}
