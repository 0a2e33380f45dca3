// Builds the AppContext from a config and an open database: what main.ts and the test helpers share.
import type { Config } from "../config/config.ts";
import type { AppContext } from "../boot/context.ts";
import type { Database } from "../db/index.ts";
import type { Logger } from "../observe/log.ts";
import { emptyRegistry } from "../plugins/types.ts";
import { TokenCache } from "./auth/token-cache.ts";
import { forgetPairLocks } from "./auth/login-throttle.ts";
import { UNLOCK_CHANNEL } from "./auth/login-unlock.ts";
import { LookupGate } from "./auth/lookup-gate.ts";
import { EmbeddedTokenIds } from "./auth/token-ids.ts";
import { tokenReader } from "./auth/tokens.ts";
import { TenantTreeCache } from "./identity/tenant-cache.ts";
import { readTopTenantUuid } from "./identity/tenant-tree.ts";
import { listenOidcChanges } from "./oidc/cache-notices.ts";
import { errorFields } from "../observe/log.ts";

export async function buildContext(config: Config, database: Database, log: Logger): Promise<AppContext> {
  const app: AppContext = {
    config,
    database,
    db: database.db,
    log,
    topTenantUuid: await readTopTenantUuid(database.db),
    xivoUuid: config.uuid,
    tokenCache: new TokenCache(),
    tokenLookups: new LookupGate(
      tokenReader(database.db),
      database.kind === "pglite" ? 1 : Math.max(1, Math.floor(config.db_pool_size / 2)),
    ),
    tokenIds: database.kind === "pglite" ? await EmbeddedTokenIds.of(database) : null,
    tenantTree: new TenantTreeCache(),
    plugins: emptyRegistry(),
    statusProviders: [],
    onClose: [],
  };
  // Revocations committed by any instance drop the token from this instance's cache.
  const unlisten = await database.listen("tessera_token_deleted", (uuid) => {
    app.tokenCache.evict(uuid);
    app.tokenIds?.delete(uuid);
  });
  app.onClose.push(unlisten);
  app.onClose.push(await database.listen("tessera_tenants_changed", (payload) => app.tenantTree.applyNotice(payload)));
  app.onClose.push(await database.listen(UNLOCK_CHANNEL, () => forgetPairLocks(app)));
  // OIDC clients, the JWK Set and the signing keys changed by any instance (services/oidc/cache-notices.ts).
  app.onClose.push(await listenOidcChanges(app));
  watchCacheInvalidation(app);
  return app;
}

/**
 * A NOTIFY sent while this instance was not listening is lost: stop trusting the caches until every
 * channel is subscribed again, then drop them (subscribed first, so nothing slips between). With
 * `token_check_staleness: N` the caches stay in use for at most N seconds of deafness first (a
 * revocation committed meanwhile may be missed that long), so that token checks ride out a database
 * failover from memory; they are dropped all the same when hearing resumes.
 */
function watchCacheInvalidation(app: AppContext): void {
  const { log } = app;
  const graceMs = app.config.token_check_staleness * 1000;
  let grace: ReturnType<typeof setTimeout> | null = null;
  const suspend = () => {
    grace = null;
    app.tokenCache.suspend();
    app.tenantTree.suspend();
    log.error("notifications may be missed (LISTEN connection lost or silent): token cache and tenant tree bypassed");
  };
  app.database.onListenChange((listening) => {
    if (listening) {
      if (grace) clearTimeout(grace);
      grace = null;
      app.tokenCache.resume();
      app.tenantTree.resume();
      forgetPairLocks(app); // an unlock may have been missed
      log.warn("notifications heard again: token cache and tenant tree dropped and trusted again");
    } else if (graceMs > 0) {
      log.error(
        "notifications may be missed (LISTEN connection lost or silent): token cache still used for token_check_staleness",
        { seconds: app.config.token_check_staleness },
      );
      grace = setTimeout(suspend, graceMs);
      grace.unref?.();
    } else {
      suspend();
    }
  });
  app.onClose.push(() => {
    if (grace) clearTimeout(grace);
  });
}

/**
 * Runs the close hooks (newest first), then closes the database. `progress.remaining` names the
 * steps not yet done (a hook by its function's name), so a caller that stops waiting can say what
 * it abandoned.
 */
export async function closeContext(
  app: AppContext,
  progress: { remaining: string[] } = { remaining: [] },
): Promise<void> {
  const hooks = [...app.onClose].reverse();
  app.onClose.length = 0;
  progress.remaining = [
    ...hooks.map((hook, i) => hook.name || `close hook ${hooks.length - i}`),
    `database (${app.database.kind})`,
  ];
  for (const hook of hooks) {
    try {
      await hook();
    } catch (e) {
      app.log.warn("close hook failed", errorFields(e));
    }
    progress.remaining.shift();
  }
  await app.database.close();
  progress.remaining.shift();
}

/**
 * closeContext bounded by `ms` (a frozen database never answers the statements that closing sends):
 * the steps abandoned when the time ran out, or an empty list when everything closed.
 */
export async function closeContextWithin(app: AppContext, ms: number): Promise<string[]> {
  const progress = { remaining: [] as string[] };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), ms)));
  try {
    const outcome = await Promise.race([closeContext(app, progress).then(() => "closed" as const), late]);
    return outcome === "late" ? progress.remaining : [];
  } finally {
    clearTimeout(timer);
  }
}
