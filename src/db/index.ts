// Opens the database (postgres.js when a URL is configured, embedded PGlite otherwise), applies
// the migrations of drizzle/, and exposes LISTEN for cross-instance cache invalidation.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from "drizzle-orm/pg-core";
import type { ExtractTablesWithRelations } from "drizzle-orm";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import * as schema from "./schema.ts";
import { prepareSchema } from "./adopt.ts";

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
  /** Cheap liveness probe used by /status. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

const migrationsFolder = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "drizzle");

export interface OpenOptions {
  /** postgres:// URL; absent → PGlite. */
  url?: string | null;
  /** PGlite data directory, or `memory://` for a throw-away database. */
  dataDir?: string;
  poolSize?: number;
  /** PGlite only: start from this dump of a data directory (tests copy one migrated template). */
  template?: Blob;
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  const database = opts.url ? await openPostgres(opts.url, opts.poolSize ?? 10) : await openPglite(opts.dataDir ?? "./data", opts.template);
  return database;
}

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  const { default: postgres } = await import("postgres");
  const { drizzle } = await import("drizzle-orm/postgres-js");
  const { migrate } = await import("drizzle-orm/postgres-js/migrator");
  const client = postgres(url, { max: poolSize, onnotice: () => {}, connect_timeout: 10 });
  const db = drizzle(client, { schema }) as unknown as Db;
  await prepareSchema(db, migrationsFolder); // adopts a wazo-auth database; migrations under a lock
  await migrate(db as never, { migrationsFolder });
  return {
    db,
    kind: "postgres",
    async listen(channel, onMessage) {
      const sub = await client.listen(channel, onMessage);
      return () => sub.unlisten();
    },
    async ping() {
      try {
        await client`select 1`;
        return true;
      } catch {
        return false;
      }
    },
    close: () => client.end({ timeout: 5 }),
  };
}

async function openPglite(dataDir: string, template?: Blob): Promise<Database> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { drizzle } = await import("drizzle-orm/pglite");
  const { migrate } = await import("drizzle-orm/pglite/migrator");
  const lock = dataDir.startsWith("memory://") ? null : lockDataDir(dataDir);
  const client = await PGlite.create(dataDir, { ...pgliteOptions(), ...(template ? { loadDataDir: template } : {}) });
  const db = drizzle(client, { schema }) as unknown as Db;
  await prepareSchema(db, migrationsFolder); // adopts a wazo-auth database (imported as it was)
  await migrate(db as never, { migrationsFolder });
  let closed = false;
  return {
    db,
    kind: "pglite",
    async listen(channel, onMessage) {
      const unsub = await client.listen(channel, onMessage);
      return () => unsub();
    },
    async ping() {
      if (closed) return false;
      try {
        await client.query("select 1");
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await client.close();
      lock?.release();
    },
  };
}

/** PGlite's options every Tessera database needs: the extensions the migrations create (pg_trgm). */
export function pgliteOptions() {
  return { extensions: { pg_trgm } };
}

/**
 * PGlite is an embedded, single-process database: a second process opening the same directory
 * would corrupt it. A pid file refuses that with a clear message (a stale one is taken over).
 */
function lockDataDir(dataDir: string): { release(): void } {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, "tessera.pid");
  if (existsSync(path)) {
    const pid = Number(readFileSync(path, "utf8"));
    if (pid && pid !== process.pid && isAlive(pid)) {
      throw new Error(`the embedded database in ${dataDir} is in use by process ${pid}; stop it first (or use PostgreSQL with DATABASE_URL)`);
    }
  }
  writeFileSync(path, String(process.pid));
  return { release: () => rmSync(path, { force: true }) };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Rows of a raw `db.execute()` result, whichever driver produced it. */
export function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

export async function execRows<T>(db: DbOrTx, query: ReturnType<typeof sql>): Promise<T[]> {
  return rowsOf<T>(await db.execute(query));
}

export { schema };
