// The database's types, owned here so that every db/ module (adopt.ts, tx.ts…) and every service can
// name them without importing the module that opens the database.
import type { ExtractTablesWithRelations } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from "drizzle-orm/pg-core";
import type * as schema from "./schema.ts";

export type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
export type Tx = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
/** Either the database or a transaction: services accept both so callers choose the boundary. */
export type DbOrTx = Db | Tx;

export interface Database {
  db: Db;
  kind: "pglite" | "postgres";
  /** Subscribe to a NOTIFY channel; returns an unsubscribe function. */
  listen(channel: string, onMessage: (payload: string) => void): Promise<() => Promise<void>>;
  /**
   * False while notifications may be missed (the LISTEN connection is lost or silent): caches fed
   * by NOTIFY must not be trusted then. Always true on PGlite (its own thread of this process, never deaf).
   */
  listening(): boolean;
  /** Called with false when notifications may be missed, with true once every channel is heard again. */
  onListenChange(fn: (listening: boolean) => void): void;
  /** Backend pid of the LISTEN connection (PostgreSQL; null on PGlite or before the first heartbeat). */
  listenerPid(): number | null;
  /**
   * Called if the database is lost for good: PGlite's thread stopped (an abort of the engine, out of
   * memory). Never on PostgreSQL, whose connections come back by themselves.
   */
  onLost(fn: (reason: string) => void): void;
  /**
   * The embedded database's data directory as a gzip'd tar, consistent, taken while it serves (PGlite's
   * dumpDataDir); absent on PostgreSQL, whose own tools (pg_dump) do this.
   */
  dump?(): Promise<Uint8Array<ArrayBuffer>>;
  /** Cheap liveness probe used by /status; false when it fails or takes longer than `timeoutMs`. */
  ping(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}
