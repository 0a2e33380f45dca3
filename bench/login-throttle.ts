// What login throttling costs and saves, in process on a fresh PGlite database with production
// password hashing (argon2id, 19 MiB, t=2): the median latency of a failed login with
// throttling on and off, and of an attempt refused by a lock (429, no derivation), whether this
// instance already knows the lock or must query it. Prints a table.
// Usage: npx bun bench/login-throttle.ts [attempts]
import { createApp } from "../src/app.ts";
import { parseConfig } from "../src/config/config.ts";
import { openDatabase } from "../src/db/index.ts";
import { silentLogger } from "../src/observe/log.ts";
import { buildContext, closeContext } from "../src/services/app-context.ts";
import { startServices } from "../src/boot/startup.ts";
import { hashPassword } from "../src/services/auth/passwords.ts";
import { sql } from "drizzle-orm";
import { loginThrottle, users } from "../src/db/schema.ts";

const attempts = Number(process.argv[2] ?? 20);
const config = parseConfig({
  token_cleanup_interval: 0,
  login_throttling: { max_failures: 1_000_000, max_failures_per_address: 1_000_000 },
});
const app = await buildContext(config, await openDatabase({ dataDir: "memory://" }), silentLogger);
await startServices(app);
const http = createApp(app);
const pw = await hashPassword("right", config);
await app.db.insert(users).values({
  uuid: crypto.randomUUID(),
  username: "bench",
  tenantUuid: app.topTenantUuid,
  purpose: "user",
  passwordHash: pw.hash,
  passwordSalt: pw.salt,
  passwordIterations: pw.iterations,
});

const attempt = async (login: string) => {
  const started = performance.now();
  const r = await http.request(
    "/0.1/token",
    { method: "POST", headers: { Authorization: `Basic ${btoa(`${login}:wrong`)}` }, body: "{}" },
    { remoteAddr: "203.0.113.1" },
  );
  await r.text();
  return { ms: performance.now() - started, status: r.status };
};
const median = async (login: () => string, expected: number) => {
  const times: number[] = [];
  for (let i = 0; i < attempts; i++) {
    const { ms, status } = await attempt(login());
    if (status !== expected) throw new Error(`expected ${expected}, got ${status}`);
    times.push(ms);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
};

// On and off alternate, so machine load drifts the same way for both.
const onTimes: number[] = [];
const offTimes: number[] = [];
for (let i = 0; i < attempts; i++) {
  for (const enabled of [true, false]) {
    app.config.login_throttling.enabled = enabled;
    (enabled ? onTimes : offTimes).push((await attempt("bench")).ms);
  }
}
app.config.login_throttling.enabled = true;
const mid = (t: number[]) => t.sort((a, b) => a - b)[Math.floor(t.length / 2)]!;
const [on, off] = [mid(onTimes), mid(offTimes)];
app.config.login_throttling.max_failures = 1;
await attempt("locked"); // the first failure locks "locked"
const refusedCached = await median(() => "locked", 429);
// Locks set by "another instance" (rows only, not in this instance's memory): one indexed query each.
let n = 0;
await app.db.insert(loginThrottle).values(
  Array.from({ length: attempts }, (_, i) => ({
    kind: "login",
    key: `remote-${i}`,
    failures: 30,
    lastFailureAt: sql`now()`,
    lockedUntil: sql`now() + interval '1 hour'`,
    lockedAtFailures: 30,
  })),
);
const refusedQueried = await median(() => `remote-${n++}`, 429);
console.log(`| attempt (${attempts} each, median) | ms |\n|---|---:|`);
console.log(`| failed login, throttling off | ${off.toFixed(1)} |`);
console.log(`| failed login, throttling on (+ one upsert per key) | ${on.toFixed(1)} |`);
console.log(`| refused, lock known to this instance (429 from memory) | ${refusedCached.toFixed(2)} |`);
console.log(`| refused, lock set by another instance (429 after one query) | ${refusedQueried.toFixed(2)} |`);
await closeContext(app);
