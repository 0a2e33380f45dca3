// Builds the AppContext from a config and an open database: what main.ts and the test helpers share.
import type { Config } from "../config.ts";
import type { AppContext } from "../context.ts";
import type { Database } from "../db/index.ts";
import type { Logger } from "../log.ts";
import { emptyRegistry } from "../plugins/types.ts";
import { TokenCache } from "./token-cache.ts";
import { TenantTreeCache } from "./tenant-cache.ts";
import { readTopTenantUuid } from "./tenant-tree.ts";

export async function buildContext(config: Config, database: Database, log: Logger): Promise<AppContext> {
  const app: AppContext = {
    config,
    database,
    db: database.db,
    log,
    topTenantUuid: await readTopTenantUuid(database.db),
    xivoUuid: config.uuid,
    tokenCache: new TokenCache(),
    tenantTree: new TenantTreeCache(),
    plugins: emptyRegistry(),
    statusProviders: [],
    onClose: [],
  };
  // Revocations committed by any instance drop the token from this instance's cache.
  const unlisten = await database.listen("tessera_token_deleted", (uuid) => app.tokenCache.evict(uuid));
  app.onClose.push(unlisten);
  app.onClose.push(await database.listen("tessera_tenants_changed", () => app.tenantTree.invalidate()));
  return app;
}

/** Runs the close hooks (newest first), then closes the database. */
export async function closeContext(app: AppContext): Promise<void> {
  for (const hook of [...app.onClose].reverse()) {
    try {
      await hook();
    } catch (e) {
      app.log.warn("close hook failed", { error: (e as Error).message });
    }
  }
  app.onClose.length = 0;
  await app.database.close();
}
