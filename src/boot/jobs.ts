// Scheduled work (croner): purge of expired tokens and their sessions, expire-soon notices, and
// forgotten login-throttling counters, expired WebAuthn challenges and second steps, spent initial
// access tokens and expired pushed authorization requests, old outbox events (in every configuration,
// with a bus or without: without one, nothing else ever deletes them), every
// `token_cleanup_interval` seconds (0 disables).
import { Cron } from "croner";
import type { AppContext } from "./context.ts";
import { purgeExpiredTokens, notifyExpiringSoon } from "../services/auth/token-cleanup.ts";
import { purgeThrottleCounters } from "../services/auth/login-throttle.ts";
import { purgeSamlSessions } from "../services/integrations/saml/saml-sessions.ts";
import { purgeBrowserSessions } from "../services/oidc/browser-session.ts";
import { rotateSigningKeysIfDue } from "../services/oidc/keys.ts";
import { purgeExpiredDeviceCodes } from "../services/oidc/device.ts";
import { purgeSpentInitialAccessTokens } from "../services/oidc/initial-access-tokens.ts";
import { purgeExpiredPushedRequests } from "../services/oidc/pushed-requests.ts";
import { purgeExpiredRefreshTokens } from "../services/oidc/grants.ts";
import { purgeSpentDpopProofs } from "../services/oidc/dpop.ts";
import { applyRetention } from "../services/audit/chain.ts";
import { purgeExpiredChallenges } from "../services/auth/webauthn.ts";
import { purgeExpiredPendingSignIns } from "../services/oidc/mfa-sign-in.ts";
import { pruneOutbox } from "../bus/outbox.ts";

export function startJobs(app: AppContext): void {
  startKeyRotation(app);
  const interval = app.config.token_cleanup_interval;
  if (interval <= 0) return;
  // Every second at most once per interval (croner's `interval`), the first run one interval after
  // the start: a pattern of the interval itself (`*/300 * * * * *`) is refused by croner past 60
  // seconds, and stopped the start of a service configured with `token_cleanup_interval: 300`.
  const seconds = Math.max(1, Math.round(interval));
  schedule(app, "token cleanup", "* * * * * *", seconds, () => runCleanup(app));
}

/**
 * A croner job running `work` (never two at once; a failure is logged as "`name` failed"), its first
 * run `interval` seconds from now when one is given. Closing stops it and waits for a run under way,
 * so that the database is not closed under the run's statements; a shutdown that gives up waiting
 * (a frozen database) names it among what it abandoned.
 */
function schedule(
  app: AppContext,
  name: string,
  pattern: string,
  interval: number,
  work: () => Promise<unknown>,
): void {
  let running: Promise<void> | null = null;
  const startAt = interval > 0 ? new Date(Date.now() + interval * 1000) : undefined;
  const job = new Cron(pattern, { protect: true, interval, startAt }, () => {
    running = work()
      .then(
        () => {},
        (e) => app.log.error(`${name} failed`, { error: (e as Error).message }),
      )
      .finally(() => (running = null));
    return running;
  });
  const stop = async () => {
    job.stop();
    await running;
  };
  app.onClose.push(Object.defineProperty(stop, "name", { value: `scheduled ${name}` }));
}

export async function runCleanup(app: AppContext): Promise<{
  purged: number;
  notified: number;
  throttleCounters: number;
  samlSessions: number;
  oidcGrants: number;
  auditEntries: number;
  mfaCeremonies: number;
  oidcRequests: number;
  outboxEvents: number;
}> {
  const purged = await purgeExpiredTokens(app);
  const samlSessions = await purgeSamlSessions(app);
  // Spent DPoP proofs (RFC 9449 §11.1) count with the grants' leftovers.
  const oidcGrants =
    (await purgeExpiredDeviceCodes(app)) + (await purgeExpiredRefreshTokens(app)) + (await purgeSpentDpopProofs(app));
  // Registration and authorization requests that can be used no more (RFC 7591 §3, RFC 9126 §2.2).
  const oidcRequests = (await purgeSpentInitialAccessTokens(app)) + (await purgeExpiredPushedRequests(app));
  const notified = await notifyExpiringSoon(app);
  const throttleCounters = await purgeThrottleCounters(app);
  const browserSessions = await purgeBrowserSessions(app);
  // Expired WebAuthn challenges and unfinished second steps of the login page (issue 25).
  const mfaCeremonies = (await purgeExpiredChallenges(app)) + (await purgeExpiredPendingSignIns(app));
  if (browserSessions) app.log.info("OIDC browser sessions expired", { purged: browserSessions });
  const auditEntries = await applyRetention(app);
  const outboxEvents = await pruneOutbox(app, app.config.outbox_retention_seconds);
  const any = purged || notified || throttleCounters || samlSessions || oidcGrants || auditEntries;
  if (any || mfaCeremonies || oidcRequests || outboxEvents) {
    app.log.info("token cleanup", {
      purged_sessions: purged,
      expire_soon_notices: notified,
      forgotten_throttle_counters: throttleCounters,
      purged_saml_sessions: samlSessions,
      purged_oidc_grants: oidcGrants,
      expired_audit_entries: auditEntries,
      purged_mfa_ceremonies: mfaCeremonies,
      purged_oidc_requests: oidcRequests,
      pruned_outbox_events: outboxEvents,
    });
  }
  return {
    purged,
    notified,
    throttleCounters,
    samlSessions,
    oidcGrants,
    auditEntries,
    mfaCeremonies,
    oidcRequests,
    outboxEvents,
  };
}

/** The OpenID Connect signing keys' scheduled rotation (`oidc.key_rotation_days`), checked hourly. */
function startKeyRotation(app: AppContext): void {
  if (app.config.oidc.key_rotation_days <= 0) return;
  schedule(app, "OpenID Connect key rotation", "17 * * * *", 0, () => rotateSigningKeysIfDue(app));
}
