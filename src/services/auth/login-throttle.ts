// Brute-force protection (docs/security.md "Login throttling"): failures are counted per login name *and*
// client address (the pair), per client address, and per login name from all addresses, in
// `tessera_login_throttle`, shared by every instance. A pair or an address reaching its threshold
// is locked for `wait_increment × 2^(failures − threshold)` seconds (capped), and its attempts are
// refused with 429 before any password is hashed. A login name alone is never locked — anyone could
// then lock anyone out — but past its much higher ceiling every attempt on it is slowed and its
// pairs lock at their first failure. One indexed query checks; one atomic upsert per key counts, so
// concurrent failures on several instances are all counted.
import { and, eq, lt, or, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { afterCommit } from "../../db/tx.ts";
import { loginThrottle } from "../../db/schema.ts";
import { ServiceUnavailable, TooManyRequests } from "../../domain/errors.ts";
import { publishEvent } from "../events.ts";
import { LockCache } from "./lock-cache.ts";
import { addressKey, canonicalAddress, normaliseLogin } from "./throttle-keys.ts";

/** Who is trying what: the login name as given (null when none applies) and the client address. */
export interface ThrottleSubject {
  action: "login" | "password_reset";
  login: string | null;
  remoteAddr: string;
  /** The address came from a trusted proxy's X-Forwarded-For: never exempt (docs/security.md, "Client address"). */
  forwarded: boolean;
}

export interface CounterKey {
  kind: "login" | "login_address" | "address" | "reset_login" | "reset_address" | "second_factor";
  key: string;
  threshold: number;
  by: "login" | "login_address" | "address" | "second_factor";
  /** False for the per-login count of logins: it slows past its threshold, never refuses. */
  locks: boolean;
}

/** The pair key: the login name, a newline (never in a stored login), the address key. */
export const pairKey = (login: string, address: string | null) => `${login}\n${address ?? "unknown"}`;

const caches = new WeakMap<AppContext, LockCache>();
const cacheOf = (app: AppContext) => caches.get(app) ?? caches.set(app, new LockCache()).get(app)!;

function counterKeys(app: AppContext, s: ThrottleSubject): CounterKey[] {
  const c = app.config.login_throttling;
  const reset = s.action === "password_reset";
  const keys: CounterKey[] = [];
  const address = addressKey(s.remoteAddr);
  if (s.login && reset) {
    keys.push({
      kind: "reset_login",
      key: normaliseLogin(s.login),
      threshold: c.password_reset_max_requests,
      by: "login",
      locks: true,
    });
  } else if (s.login) {
    const login = normaliseLogin(s.login);
    // The per-login count first: its total decides the pair's threshold (countFailure).
    keys.push({ kind: "login", key: login, threshold: c.max_failures_per_login, by: "login", locks: false });
    keys.push({
      kind: "login_address",
      key: pairKey(login, address),
      threshold: c.max_failures,
      by: "login_address",
      locks: true,
    });
  }
  const exempt = !s.forwarded && c.exempt_addresses.some((e) => canonicalAddress(e) === canonicalAddress(s.remoteAddr));
  if (address && !exempt) {
    keys.push({
      kind: reset ? "reset_address" : "address",
      key: address,
      threshold: reset ? c.password_reset_max_requests_per_address : c.max_failures_per_address,
      by: "address",
      locks: true,
    });
  }
  return keys;
}

/** An unlock (on any instance) ended some pair locks early: this instance forgets the ones it remembers. */
export const forgetPairLocks = (app: AppContext) => cacheOf(app).dropPrefix("login_address\n");

const cacheKey = (k: { kind: string; key: string }) => `${k.kind}\n${k.key}`;
const matching = (keys: Array<Pick<CounterKey, "kind" | "key">>): SQL =>
  or(...keys.map((k) => and(eq(loginThrottle.kind, k.kind), eq(loginThrottle.key, k.key))))!;

/**
 * Throws 429 (with Retry-After) when the login from this address, or the address, is locked; 503
 * when the check itself cannot run (a database outage never lets an attempt through, nor counts
 * it). Waits `slowdown_seconds` when the login name is past its ceiling. Otherwise says whether the
 * login name has failures on record, which a successful login then clears (the same query tells
 * both: a login with nothing to clear makes no write for it).
 */
export async function assertNotThrottled(
  app: AppContext,
  subject: ThrottleSubject,
  resource: string,
): Promise<{ loginFailures: boolean }> {
  const none = { loginFailures: false };
  if (!app.config.login_throttling.enabled) return none;
  const keys = counterKeys(app, subject);
  if (!keys.length) return none;
  const cache = cacheOf(app);
  const cachedMs = Math.max(0, ...keys.map((k) => cache.msLeft(cacheKey(k))));
  if (cachedMs > 0) throw new TooManyRequests(resource, seconds(cachedMs));
  let rows: Array<{ kind: string; key: string; leftMs: number; failures: number }>;
  const c = app.config.login_throttling;
  try {
    rows = await app.db
      .select({
        kind: loginThrottle.kind,
        key: loginThrottle.key,
        leftMs: msUntil(loginThrottle.lockedUntil),
        failures: liveFailures(c.failure_reset_seconds),
      })
      .from(loginThrottle)
      .where(matching(keys));
  } catch (e) {
    app.log.error("login throttle check failed", { error: (e as Error).message });
    throw new ServiceUnavailable(resource, "The service cannot check login attempts now; try again later");
  }
  const locked = rows.filter((r) => r.leftMs > 0); // 0 when never locked, negative once expired
  if (locked.length) {
    for (const r of locked) cache.lock(cacheKey(r), r.leftMs);
    throw new TooManyRequests(resource, seconds(Math.max(...locked.map((r) => r.leftMs))));
  }
  const slowed = rows.some((r) => r.kind === "login" && r.failures >= c.max_failures_per_login);
  if (slowed && c.slowdown_seconds > 0) await new Promise((done) => setTimeout(done, c.slowdown_seconds * 1000));
  return { loginFailures: rows.some((r) => r.kind === "login" || r.kind === "login_address") };
}

/** Failures still on record: 0 once `failure_reset_seconds` passed since the last one. */
const liveFailures = (resetSeconds: number) =>
  sql<number>`(case when ${loginThrottle.lastFailureAt} <= now() - ${resetSeconds}::int * interval '1 second' then 0 else ${loginThrottle.failures} end)::int`;

/** Milliseconds (database clock, shared by every instance) until a lock ends. */
export const msUntil = (column: SQL | typeof loginThrottle.lockedUntil) =>
  sql<number>`coalesce(extract(epoch from ${column} - now()) * 1000, 0)::float8`;
export const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/**
 * Counts one failure (or, for password reset, one request) against each key of the subject, in
 * `tx`, and records `auth_user_login_throttled` for each key this failure locked.
 */
export async function countFailure(app: AppContext, tx: DbOrTx, subject: ThrottleSubject): Promise<void> {
  const c = app.config.login_throttling;
  if (!c.enabled) return;
  let loginSlowed = false;
  for (const key of counterKeys(app, subject)) {
    // Past the login's ceiling, each address gets one guess at it per lock.
    const k: CounterKey = key.kind === "login_address" && loginSlowed ? { ...key, threshold: 1 } : key;
    const counted = await upsertFailure(tx, k, c);
    if (!counted) continue;
    if (!k.locks) {
      loginSlowed = counted.failures >= k.threshold;
      if (counted.failures === k.threshold) await throttledEvent(app, tx, subject, k.by, null);
      continue;
    }
    if (!counted.lockedNow) continue;
    const retryAfter = seconds(counted.leftMs);
    afterCommit(tx, () => {
      cacheOf(app).lock(cacheKey(k), counted.leftMs);
      app.log.warn("login throttled", {
        action: subject.action,
        throttled_by: k.by,
        login: subject.login,
        remote_addr: subject.remoteAddr,
        retry_after: retryAfter,
      });
    });
    await throttledEvent(app, tx, subject, k.by, retryAfter);
  }
}

/** `auth_user_login_throttled`: a lock set (retry_after in seconds), or a login slowed (retry_after null). */
async function throttledEvent(
  app: AppContext,
  tx: DbOrTx,
  subject: ThrottleSubject,
  by: CounterKey["by"],
  retryAfter: number | null,
): Promise<void> {
  await publishEvent(app, tx, {
    name: "auth_user_login_throttled",
    routingKey: "auth.logins.throttled",
    data: {
      login: subject.login,
      remote_addr: subject.remoteAddr,
      retry_after: retryAfter,
      throttled_by: by,
      action: subject.action,
    },
    tenantUuid: null,
    userUuid: null,
    aggregate: "logins",
  });
}

export interface Timing {
  wait_increment_seconds: number;
  max_wait_seconds: number;
  failure_reset_seconds: number;
}

/** One atomic statement: restart after `failure_reset_seconds` of quiet, count, lock at the threshold. */
export async function upsertFailure(
  tx: DbOrTx,
  k: CounterKey,
  c: Timing,
): Promise<{ lockedNow: boolean; leftMs: number; failures: number } | undefined> {
  const t = loginThrottle;
  const stale = sql`${t.lastFailureAt} <= now() - ${c.failure_reset_seconds}::int * interval '1 second'`;
  const n = sql`(case when ${stale} then 1 else ${t.failures} + 1 end)`;
  // The exponent is capped so a key failing for weeks never overflows; the wait is capped anyway.
  const wait = (failures: SQL) =>
    sql`least(${c.max_wait_seconds}::int, ${c.wait_increment_seconds}::int * power(2, least(${failures} - ${k.threshold}::int, 30))) * interval '1 second'`;
  const firstLocks = k.locks && k.threshold <= 1;
  const locksNow = k.locks ? sql`${n} >= ${k.threshold}::int` : sql`false`;
  const rows = await tx
    .insert(t)
    .values({
      kind: k.kind,
      key: k.key,
      failures: 1,
      lastFailureAt: sql`now()`,
      lockedUntil: firstLocks ? sql`now() + ${wait(sql`1`)}` : null,
      lockedAtFailures: firstLocks ? 1 : null,
    })
    .onConflictDoUpdate({
      target: [t.kind, t.key],
      set: {
        failures: n,
        lastFailureAt: sql`now()`,
        // A failure that raced with the lock (checked before it was set) is counted; the lock stays.
        lockedUntil: sql`case when ${t.lockedUntil} > now() then ${t.lockedUntil} when ${locksNow} then now() + ${wait(n)} else ${t.lockedUntil} end`,
        lockedAtFailures: sql`case when ${t.lockedUntil} > now() then ${t.lockedAtFailures} when ${locksNow} then ${n} else ${t.lockedAtFailures} end`,
      },
    })
    .returning({
      lockedNow: sql<boolean>`coalesce(${t.lockedAtFailures} = ${t.failures} and ${t.lockedUntil} > now(), false)`,
      leftMs: msUntil(t.lockedUntil),
      failures: t.failures,
    });
  return rows[0];
}

/**
 * A successful login forgets the failures of its login name and of the pair with this address (not
 * of the address: see docs/security.md).
 */
export async function clearLoginFailures(app: AppContext, subject: ThrottleSubject): Promise<void> {
  if (!app.config.login_throttling.enabled || !subject.login) return;
  const login = normaliseLogin(subject.login);
  try {
    await app.db.delete(loginThrottle).where(
      matching([
        { kind: "login", key: login },
        { kind: "login_address", key: pairKey(login, addressKey(subject.remoteAddr)) },
      ]),
    );
  } catch (e) {
    app.log.warn("could not clear the failed logins of a login", { error: (e as Error).message });
  }
}

/** Cleanup job: counters quiet for `failure_reset_seconds` and not locked are forgotten. */
export async function purgeThrottleCounters(app: AppContext): Promise<number> {
  const seconds = app.config.login_throttling.failure_reset_seconds;
  const deleted = await app.db
    .delete(loginThrottle)
    .where(
      and(
        lt(loginThrottle.lastFailureAt, sql`now() - ${seconds}::int * interval '1 second'`),
        sql`(${loginThrottle.lockedUntil} is null or ${loginThrottle.lockedUntil} <= now())`,
      ),
    )
    .returning({ kind: loginThrottle.kind });
  return deleted.length;
}
