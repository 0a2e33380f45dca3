// The long-lived dependencies every service receives. Built once by main.ts (or the test
// helpers); routes get it from the Hono context, services as their first argument.
import type { Config } from "../config/config.ts";
import type { Database, Db } from "../db/index.ts";
import type { Logger } from "../observe/log.ts";
import type { TokenCache } from "../services/auth/token-cache.ts";
import type { LookupGate } from "../services/auth/lookup-gate.ts";
import type { TokenRow } from "../db/tables/tokens.ts";
import type { EmbeddedTokenIds } from "../services/auth/token-ids.ts";
import type { TenantTreeCache } from "../services/identity/tenant-cache.ts";
import type { PluginRegistry } from "../plugins/types.ts";

export interface StatusProvider {
  /** Key under which the component appears in GET /0.1/status. */
  name: string;
  status(): Promise<Record<string, unknown> & { status: string }>;
}

export interface AppContext {
  config: Config;
  database: Database;
  db: Db;
  log: Logger;
  /** uuid of the master tenant (`uuid == parent_uuid`), read at start. */
  topTenantUuid: string;
  /** Service uuid (`uuid` config / XIVO_UUID), `xivo_uuid` of tokens and origin of events. */
  xivoUuid: string | null;
  tokenCache: TokenCache;
  /** Bounds the database lookups of tokens missing from the cache (a flood of unknown tokens). */
  tokenLookups: LookupGate<TokenRow>;
  /** Every token id of the embedded database (PGlite), so unknown ids need no query; null on PostgreSQL. */
  tokenIds: EmbeddedTokenIds | null;
  /** The tenant tree in memory, for the token check's `tenant=` test. */
  tenantTree: TenantTreeCache;
  plugins: PluginRegistry;
  /** Components reported by /status beside rest_api, database and plugins (bus, ...). */
  statusProviders: StatusProvider[];
  /** Work to run on shutdown, in reverse order of registration (jobs, publishers, listeners). */
  onClose: Array<() => Promise<void> | void>;
}
