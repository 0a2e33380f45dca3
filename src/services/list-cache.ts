// Answers of admin lists kept in memory, exact by construction. The database keeps one number,
// tessera.list_version, raised at the commit of every change to what a list reads (triggers of
// migration list_version on users, emails, groups, policies, their links and tenants, whoever
// writes: this instance, another one, or SQL). An answer is stored with the number read BEFORE its
// data, and served only while a read of the number made AFTER the request arrived still gives
// that number: whatever committed before the request is then in the answer. So the cache never
// depends on LISTEN/NOTIFY (nothing to miss when that connection is lost) and instances need no
// coordination.
//
// The read of the number is shared: a request joins the next read to start (never one already
// under way, whose snapshot may predate a commit the client has seen), so under load one tiny
// query serves every request that arrived meanwhile. Keys carry the caller's scoping tenant and
// every parameter of the list, so an answer is only ever served to the same question asked for
// the same tenant. Bounded in entries and bytes, least recently used out first.
import { sql } from "drizzle-orm";
import type { AppContext } from "../boot/context.ts";
import { execRows } from "../db/index.ts";

const MAX_ENTRIES = 2000;
const MAX_BYTES = 32 * 1024 * 1024;
/** Answers larger than this (an unpaged list of many users) are not kept. */
const MAX_ENTRY_BYTES = 512 * 1024;

interface Entry {
  version: bigint;
  body: string;
}

export class ListCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  /** Newest number seen: entries older than it can never be served again. */
  private newest = -1n;
  private inFlight: Promise<bigint> | null = null;
  private queued: Promise<bigint> | null = null;
  /**
   * The number as last notified, when every commit is heard before it returns (an embedded PGlite
   * delivers its own NOTIFY while the committing query runs): no read is needed then.
   */
  private heard: bigint | null = null;
  /** Reads of the number made (tests check that concurrent requests share them). */
  probes = 0;

  private inFlightSince = 0;

  /** `patienceMs`: a read under way for longer (a connection silently gone) is not waited for. */
  constructor(
    private readonly readVersion: () => Promise<bigint>,
    private readonly patienceMs = 5000,
  ) {}

  /**
   * The list's JSON text: from memory when nothing it reads has changed since it was stored,
   * else computed by `load` (and kept when small enough).
   */
  async answer(key: string, load: () => Promise<unknown>): Promise<string> {
    const version = await this.currentVersion();
    const hit = this.entries.get(key);
    if (hit && hit.version === version) {
      this.entries.delete(key); // re-inserted: most recently used last
      this.entries.set(key, hit);
      return hit.body;
    }
    // `version` was read after this request arrived and before `load` reads: a change committed
    // in between makes the stored entry look older than the next read, never fresher.
    const body = JSON.stringify(await load());
    this.store(key, version, body);
    return body;
  }

  /** A notified number (tessera_list_version): from then on, the number is known without a read. */
  hear(version: bigint): void {
    if (this.heard === null || version > this.heard) this.heard = version;
    if (version > this.newest) this.forgetBefore(version);
  }

  /** The number as of now: heard, or read by a query that starts after this call (shared with other callers). */
  currentVersion(): Promise<bigint> {
    if (this.heard !== null) return Promise.resolve(this.heard);
    if (this.inFlight && performance.now() - this.inFlightSince > this.patienceMs) {
      this.queued = null; // behind a read that may never end: start afresh
      return this.launch();
    }
    if (this.queued) return this.queued; // not started yet: it will start after now
    if (!this.inFlight) return this.launch();
    const next: Promise<bigint> = this.inFlight
      .catch(() => {})
      .then(() => {
        if (this.queued === next) this.queued = null;
        return this.launch();
      });
    this.queued = next;
    return next;
  }

  private launch(): Promise<bigint> {
    this.probes++;
    const probe = this.readVersion().then((v) => {
      if (v > this.newest) this.forgetBefore(v);
      return v;
    });
    const tracked = probe.finally(() => {
      if (this.inFlight === tracked) this.inFlight = null;
    });
    this.inFlight = tracked;
    this.inFlightSince = performance.now();
    return tracked;
  }

  private forgetBefore(version: bigint): void {
    this.newest = version;
    this.entries.clear();
    this.bytes = 0;
  }

  private store(key: string, version: bigint, body: string): void {
    if (version < this.newest || body.length > MAX_ENTRY_BYTES) return;
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.bytes -= old.body.length;
    }
    this.entries.set(key, { version, body });
    this.bytes += body.length;
    for (const [k, e] of this.entries) {
      if (this.entries.size <= MAX_ENTRIES && this.bytes <= MAX_BYTES) break;
      this.entries.delete(k);
      this.bytes -= e.body.length;
    }
  }

  get size(): number {
    return this.entries.size;
  }
}

const caches = new WeakMap<AppContext, ListCache>();

/** The list cache of an application (one per AppContext, made on first use). */
export function listCache(app: AppContext): ListCache {
  let cache = caches.get(app);
  if (!cache) {
    const fresh = new ListCache(versionReader(app), app.config.db_timeout * 1000);
    cache = fresh;
    caches.set(app, cache);
    if (app.database.kind === "pglite") void hearCommits(app, fresh);
  }
  return cache;
}

/**
 * PGlite only (one process owns the data directory, and its NOTIFY reaches its own listener while
 * the committing query runs, before any caller sees the commit): follow the number by
 * notification instead of reading it per request. Subscribed first, then read once, so no change
 * falls between; until then the cache reads the number.
 */
async function hearCommits(app: AppContext, cache: ListCache): Promise<void> {
  try {
    const unlisten = await app.database.listen("tessera_list_version", (payload) => {
      if (/^\d+$/.test(payload)) cache.hear(BigInt(payload));
    });
    app.onClose.push(unlisten);
    cache.hear(await versionReader(app)());
  } catch (e) {
    app.log.warn("list cache: notifications of list changes unavailable, reading the version per request", {
      error: String(e),
    });
  }
}

const VERSION_QUERY = "select version::text as version from tessera.list_version where id = 1";

function versionReader(app: AppContext): () => Promise<bigint> {
  const client = (app.db as unknown as { $client?: { query?: unknown } }).$client;
  if (app.database.kind === "pglite" && typeof client?.query === "function") {
    // Asked of PGlite directly: through drizzle, which passes its own type parsers, PGlite copies
    // its whole table of parsers for every query, the largest cost of this tiny one.
    const pglite = client as { query<T>(text: string): Promise<{ rows: T[] }> };
    return async () => BigInt((await pglite.query<{ version: string }>(VERSION_QUERY)).rows[0]?.version ?? 0);
  }
  return async () => BigInt((await execRows<{ version: string }>(app.db, sql.raw(VERSION_QUERY)))[0]?.version ?? 0);
}
