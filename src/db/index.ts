// Opens the database (postgres.js when a URL is configured, embedded PGlite otherwise), applies
// the migrations of drizzle/, and exposes LISTEN for cross-instance cache invalidation.
import { mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { sql } from "drizzle-orm";
import * as schema from "./schema.ts";
import { prepareSchema } from "./adopt.ts";
import { databaseFailure, describeCause } from "./failures.ts";
import { ConnectBreaker } from "./circuit-breaker.ts";
import { ListenHealth } from "./listen-health.ts";
import { lockDataDir } from "./pid-lock.ts";
import { embedded } from "../boot/embedded.ts";
import { isThrowAway, PgliteThreadClient } from "./pglite-client.ts";
import { isEmptyDataDir, seedDataDir } from "./pglite-template.ts";
import { PGLITE_EXTENSIONS, type CarriedModules } from "./pglite-protocol.ts";

export type { Database, Db, DbOrTx, Schema, Tx } from "./types.ts";
import type { Database, Db, DbOrTx } from "./types.ts";

const migrationsFolder = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "drizzle");

/**
 * The migrations folder: drizzle/ beside the sources, or — in a single-file build — a temporary copy
 * of the one it carries (drizzle's migrator and the wazo-auth adoption read files), removed after use.
 */
async function withMigrations(work: (folder: string) => Promise<void>): Promise<void> {
  if (!embedded) return work(migrationsFolder);
  const folder = mkdtempSync(join(tmpdir(), "tessera-migrations-"));
  try {
    for (const [path, text] of Object.entries(embedded.files)) {
      if (!path.startsWith("drizzle/")) continue;
      const target = join(folder, path.slice("drizzle/".length));
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, text);
    }
    await work(folder);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

export interface OpenOptions {
  /** postgres:// URL; absent → PGlite. */
  url?: string | null;
  /** PGlite data directory, or `memory://` for a throw-away database. */
  dataDir?: string;
  poolSize?: number;
  /** PGlite only: start from this dump of a data directory (tests copy one migrated template). */
  template?: Blob;
  /** `db_timeout` in seconds: connection timeout, LISTEN heartbeat deadline, default probe bound. */
  timeoutSeconds?: number;
  /** PGlite only (`db_watchdog_seconds`): a thread not answering a heartbeat this long is lost; absent or 0: no watchdog. */
  watchdogSeconds?: number;
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  const timeout = opts.timeoutSeconds ?? 5;
  if (opts.url) return openPostgres(opts.url, opts.poolSize ?? 10, timeout);
  const dataDir = opts.dataDir ?? "./data";
  try {
    return await openPglite(dataDir, opts.template, opts.watchdogSeconds ?? 0);
  } catch (e) {
    throw explainOpenFailure(e, dataDir);
  }
}

/** Resolves false when `probe` fails or does not answer within `ms`. */
export async function bounded(probe: () => Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      probe().then(
        () => true,
        () => false,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const HEARTBEAT_CHANNEL = "tessera_heartbeat";

/**
 * `target_session_attrs=read-write` in a multi-host db_uri (`postgres://h1:p1,h2:p2/db?…`) means, as
 * in libpq, "not a hot standby and not read-only by default". postgres.js checks only
 * default_transaction_read_only, which a hot standby of PostgreSQL 14+ reports as `off`, so it
 * would take a standby for the primary during a failover: ask it for `primary` (not in hot
 * standby) instead. A primary read-only by configuration still refuses writes (25006 → 503).
 */
function sessionAttrs(url: string): { target_session_attrs?: "primary" } {
  return /[?&]target_session_attrs=read-write(&|$)/.test(url) ? { target_session_attrs: "primary" } : {};
}

async function openPostgres(url: string, poolSize: number, timeoutSeconds: number): Promise<Database> {
  const { default: postgres } = await import("postgres");
  const { drizzle } = await import("drizzle-orm/postgres-js");
  const { migrate } = await import("drizzle-orm/postgres-js/migrator");
  const timeoutMs = Math.round(timeoutSeconds * 1000);
  const target = postgres(url).options as unknown as { path?: string | false; host: string[]; port: number[] };
  // The breaker probes one TCP address: not for a Unix socket or a list of hosts (postgres.js's fallback between them).
  const breaker =
    !target.path && target.host.length === 1
      ? new ConnectBreaker(target.host[0]!, target.port[0] ?? 5432, timeoutMs)
      : null;
  const client = postgres(url, {
    max: poolSize,
    ...sessionAttrs(url),
    onnotice: () => {},
    connect_timeout: Math.max(1, Math.ceil(timeoutSeconds)),
    // A transaction left open by a request that gave up (db_timeout) is ended by the server. No
    // statement_timeout: migrations and bulk work may legitimately run longer than a request waits.
    // No JIT: a generic plan of a paged list (limit unknown) is costed past jit_above_cost, and
    // compiling it costs ~40 ms per execution where the query itself takes under 1 ms.
    connection: { idle_in_transaction_session_timeout: Math.max(60_000, timeoutMs * 4), jit: "off" },
  });
  const db = drizzle(breaker ? breaker.guard(client) : client, { schema }) as unknown as Db;
  await withMigrations(async (folder) => {
    await prepareSchema(db, folder); // adopts a wazo-auth database; migrations under a lock
    await migrate(db as never, { migrationsFolder: folder });
  });
  const health = new ListenHealth();
  // The LISTEN connection heard again: the server accepts connections, so the breaker need not
  // wait for its next probe (a request right after the outage would otherwise still get a 503).
  health.onChange((listening) => listening && breaker?.connected());
  const me = crypto.randomUUID();
  let listenerPid: number | null = null;
  // postgres.js keeps one dedicated connection for LISTEN (`client.listen.sql`, made on the first
  // listen); its `onclose` re-subscribes every channel, so we wrap it to learn of the loss first.
  type ListenSql = ReturnType<typeof postgres> & { options: { onclose?: (...a: unknown[]) => void } };
  const listenSql = () => (client.listen as unknown as { sql?: ListenSql }).sql;
  const subscribe = async (channel: string, onMessage: (payload: string) => void) => {
    health.track(channel);
    const sub = await client.listen(channel, onMessage, () => health.subscribed(channel));
    const options = listenSql()?.options;
    if (options && !(options.onclose as { wrapped?: boolean } | undefined)?.wrapped) {
      const original = options.onclose;
      const wrapped = Object.assign(
        (...args: unknown[]) => {
          health.connectionLost();
          original?.(...args);
        },
        { wrapped: true },
      );
      options.onclose = wrapped;
    }
    return sub;
  };
  await subscribe(HEARTBEAT_CHANNEL, (payload) => {
    if (payload === me) health.heard();
  });
  let beating = false;
  const heartbeat = setInterval(
    () => {
      health.checkSilence(timeoutMs);
      const sql = listenSql();
      if (beating || !sql) return;
      beating = true;
      sql`select pg_notify(${HEARTBEAT_CHANNEL}, ${me}), pg_backend_pid() as pid`
        .then((rows) => (listenerPid = Number(rows[0]?.pid) || null))
        .catch(() => {})
        .finally(() => (beating = false));
    },
    Math.min(1000, Math.round(timeoutMs / 3)),
  );
  heartbeat.unref?.();
  return {
    db,
    kind: "postgres",
    async listen(channel, onMessage) {
      const sub = await subscribe(channel, onMessage);
      // Named: a shutdown that gives up on a frozen server lists the close hooks it abandoned.
      return Object.defineProperty(() => sub.unlisten(), "name", { value: `unlisten ${channel}` });
    },
    listening: () => health.listening,
    onListenChange: (fn) => health.onChange(fn),
    listenerPid: () => listenerPid,
    onLost: () => {},
    ping: async (ms = timeoutMs) => !breaker?.isOpen && bounded(() => client`select 1`, ms),
    async close() {
      health.close();
      clearInterval(heartbeat);
      breaker?.stop();
      await client.end({ timeout: 5 });
    },
  };
}

async function openPglite(dataDir: string, template: Blob | undefined, watchdogSeconds: number): Promise<Database> {
  const throwAway = isThrowAway(dataDir);
  const lock = throwAway ? null : lockDataDir(dataDir);
  // The thread starts before the first await: the caller (main.ts) loads the service's modules
  // meanwhile, and would otherwise hold the thread's start back by that whole load (~90 ms).
  // A data directory (the service's one database) lets its thread compile the engine, beside the main
  // thread's loading of the service's modules: a restart answers ~50 ms sooner (medians of eight
  // alternated restarts, 688 against 743 ms). Throw-away databases (tests) share one compiled engine.
  const thread = PgliteThreadClient.start({ compile: !embedded?.pglite && throwAway, throwAway });
  const driver = Promise.all([import("drizzle-orm/pglite"), import("drizzle-orm/pglite/migrator")]);
  driver.catch(() => {}); // awaited once the database is open
  let client: PgliteThreadClient;
  try {
    const modules = await carriedModules();
    if (!template && lock && isEmptyDataDir(dataDir)) await seedDataDir(dataDir, modules);
    client = await thread.open(dataDir, { template, modules });
  } catch (e) {
    thread.abandon();
    lock?.release();
    throw e;
  }
  const [{ drizzle }, { migrate }] = await driver;
  const db = drizzle(client as never, { schema }) as unknown as Db;
  await withMigrations(async (folder) => {
    await prepareSchema(db, folder); // adopts a wazo-auth database (imported as it was)
    await migrate(db as never, { migrationsFolder: folder });
  });
  if (watchdogSeconds > 0) client.watch(watchdogSeconds * 1000); // after the migrations, which may be long
  let closed = false;
  return {
    db,
    kind: "pglite",
    listen: (channel, onMessage) => client.listen(channel, onMessage),
    listening: () => true,
    onListenChange: () => {},
    listenerPid: () => null,
    onLost: (fn) => client.onLost(fn),
    dump: () => client.dump(),
    async ping(ms = 5000) {
      if (closed) return false;
      return bounded(() => client.query("select 1"), ms);
    },
    async close() {
      if (closed) return;
      closed = true;
      await client.close();
      lock?.release();
    },
  };
}

/** PGlite's runtime files carried by a single-file build, for its thread (which has no `embedded`). */
async function carriedModules(): Promise<CarriedModules | undefined> {
  const carried = embedded?.pglite;
  if (!carried) return undefined;
  return {
    wasm: carried.wasm,
    initdbWasm: carried.initdbWasm,
    fsBundle: await carried.fsBundle.arrayBuffer(),
    pgTrgmBundle: await carried.pgTrgmBundle.arrayBuffer(),
  };
}

/**
 * PGlite's options every Tessera database needs — the extensions the migrations create (pg_trgm) —
 * for a PGlite opened in this thread (the tests' migrated template; the service's own database is
 * opened by its thread, pglite-thread.ts, with the same extension).
 */
export function pgliteOptions() {
  return { extensions: PGLITE_EXTENSIONS };
}

/** A start-up failure with its reason named: a full disk says so, with the free space. */
export function explainOpenFailure(e: unknown, dataDir: string): Error {
  const message = describeCause(e).message;
  let free: number | null = null;
  try {
    const s = statfsSync(dataDir);
    free = s.bavail * s.bsize;
  } catch {}
  const failure = databaseFailure(e);
  if (failure?.code === "ENOSPC" || /no space left/i.test(message) || (free !== null && free < 16 * 1024 * 1024)) {
    // The code travels with the explanation (logged as the cause's code), the engine's text only if it has any.
    const explained = `no space left on the device of ${dataDir} (${free === null ? "unknown" : `${Math.floor(free / 1024)} KiB`} free)`;
    return Object.assign(new Error(message ? `${explained}: ${message}` : explained), {
      code: failure?.code ?? "ENOSPC",
    });
  }
  return e instanceof Error ? e : new Error(message);
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
