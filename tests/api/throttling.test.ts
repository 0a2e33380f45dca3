// Login throttling (brute-force protection): per login and address, per address, and a per-login
// ceiling that slows without refusing; 429 + Retry-After before any password derivation, shared by
// instances through the database; the administrator's unlock.
import { describe, expect, test } from "bun:test";
import { and, eq, sql } from "drizzle-orm";
import { createApp } from "../../src/app.ts";
import { parseConfig } from "../../src/config/config.ts";
import { openDatabase } from "../../src/db/index.ts";
import { loginThrottle } from "../../src/db/schema.ts";
import { runCleanup } from "../../src/boot/jobs.ts";
import { silentLogger } from "../../src/observe/log.ts";
import { addressKey, normaliseLogin } from "../../src/services/auth/throttle-keys.ts";
import { pairKey } from "../../src/services/auth/login-throttle.ts";
import { buildContext, closeContext } from "../../src/services/app-context.ts";
import { listRecordedEvents } from "../../src/services/events.ts";
import { startServices } from "../../src/boot/startup.ts";
import { createTestApp, describeEachDb, type TestApp } from "../helpers/app.ts";
import { createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { closedPort } from "../helpers/smtp-server.ts";
import { passwordChecks } from "../fixtures/plugins/counting-backend.ts";

const basic = (login: string, password: string) => `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`;
let addressSeq = 0;
/** A fresh client address per test, so address counters of one test never touch another. */
const freshAddress = () => `198.51.100.${++addressSeq}`;
const uniq = () => crypto.randomUUID().slice(0, 8);

const config = {
  public_url: "https://auth.example.com",
  login_throttling: {
    max_failures: 3,
    max_failures_per_address: 5,
    max_failures_per_login: 50,
    wait_increment_seconds: 30,
    max_wait_seconds: 120,
    password_reset_max_requests: 2,
    password_reset_max_requests_per_address: 4,
  },
  plugins: {
    backends: { wazo_user: "./tests/fixtures/plugins/counting-backend.ts" },
    idp: { testidp: { module: "./tests/fixtures/plugins/test-idp.ts", priority: 5, config: { secret: "s3" } } },
  },
};

function login(
  t: TestApp,
  auth: string | null,
  addr: string,
  body: unknown = {},
  headers: Record<string, string> = {},
) {
  return t.request("POST", "/0.1/token", {
    body,
    remoteAddr: addr,
    headers: { ...(auth ? { Authorization: auth } : {}), ...headers },
  });
}

/** The counter of a login name from one address. */
const pair = (t: TestApp, login: string, addr: string) => counter(t, "login_address", pairKey(login, addressKey(addr)));

async function counter(t: TestApp, kind: string, key: string) {
  const [row] = await t.app.db
    .select()
    .from(loginThrottle)
    .where(and(eq(loginThrottle.kind, kind), eq(loginThrottle.key, key)));
  return row;
}

async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const v = await read();
    if (ok(v)) return v;
    await Bun.sleep(20);
  }
  throw new Error("condition not reached");
}

// biome-ignore lint: error bodies are arbitrary JSON
const withoutTime = (b: any): any => ({ ...b, timestamp: 0 });
/** A 429 of throttling: Retry-After within (0, wait] and repeated in the body (load may eat a second). */
function expectThrottled(r: { status: number; headers: Headers; json: any }, resource: string, wait: number): void {
  const retryAfter = Number(r.headers.get("Retry-After"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(wait);
  expect([r.status, withoutTime(r.json)]).toEqual([
    429,
    {
      error_id: "too-many-requests",
      message: "Too many failed attempts; retry later",
      resource,
      details: { retry_after: retryAfter },
      timestamp: 0,
    },
  ]);
}

/** Runs `fn` with some throttling settings changed, then restores them. */
async function withSettings(
  t: TestApp,
  changes: Record<string, number | boolean>,
  fn: () => Promise<void>,
): Promise<void> {
  const settings = t.app.config.login_throttling as unknown as Record<string, unknown>;
  const saved = { ...settings };
  Object.assign(settings, changes);
  try {
    await fn();
  } finally {
    Object.assign(settings, saved);
  }
}

test("keys: logins are trimmed, NFKC and lower-cased (look-alikes count as one); IPv6 counts per /64; IPv4-mapped is IPv4", () => {
  expect(normaliseLogin("  Élodie@Example.COM ")).toBe(normaliseLogin("e\u0301lodie@example.com"));
  // look-alikes that log in as one user count as one (full-width, ligature)
  expect(normaliseLogin("ＡＤＭＩＮ")).toBe(normaliseLogin("admin"));
  expect(normaliseLogin("ﬁnance")).toBe(normaliseLogin("finance"));
  expect(normaliseLogin("x".repeat(300))).toMatch(/^sha256:[0-9a-f]{64}$/);
  expect(addressKey("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
  expect(addressKey("2001:DB8:1:2:bbbb:cccc:dddd:eeee")).toBe("2001:db8:1:2::/64");
  expect(addressKey("::ffff:203.0.113.7")).toBe("203.0.113.7");
  expect(addressKey("203.0.113.7")).toBe("203.0.113.7");
  expect(addressKey("")).toBeNull();
});

describeEachDb(
  "login throttling",
  (get) => {
    test("after max_failures from one address the right password is refused there with 429 + Retry-After, accepted from a clean address, and there after the wait", async () => {
      const t = get();
      await withSettings(t, { wait_increment_seconds: 2 }, async () => {
        const addr = freshAddress();
        await createUserRow(t.app, { username: "Victim", password: "right" });
        for (let i = 0; i < 3; i++) expect((await login(t, basic("victim", `wrong${i}`), addr)).status).toBe(401);
        const refused = await login(t, basic("victim", "right"), addr);
        expectThrottled(refused, "tokens", 2);
        // Another spelling of the same login is the same counter; another address is not.
        expect((await login(t, basic(" VICTIM ", "right"), addr)).status).toBe(429);
        expect((await login(t, basic("victim", "right"), freshAddress())).status).toBe(200);
        await Bun.sleep(Number(refused.headers.get("Retry-After")) * 1000);
        expect((await login(t, basic("victim", "right"), addr)).status).toBe(200);
        expect(await counter(t, "login", "victim")).toBeUndefined(); // success forgets the login's failures
        expect(await pair(t, "victim", addr)).toBeUndefined(); // and those of the pair it came from
      });
    });

    test("the wait doubles with each failure beyond the threshold, up to max_wait_seconds", async () => {
      const t = get();
      await withSettings(t, { wait_increment_seconds: 1, max_wait_seconds: 3 }, async () => {
        const addr = freshAddress();
        const name = `doubling-${uniq()}`;
        // The lock's length as the database set it (one statement: immune to the test's own delays).
        const lockSeconds = async () =>
          (
            await t.app.db
              .select({
                s: sql<number>`extract(epoch from ${loginThrottle.lockedUntil} - ${loginThrottle.lastFailureAt})::float8`,
              })
              .from(loginThrottle)
              .where(and(eq(loginThrottle.kind, "login_address"), eq(loginThrottle.key, pairKey(name, addr))))
          )[0]!.s;
        for (let i = 0; i < 2; i++) await login(t, basic(name, "wrong"), addr);
        expect((await pair(t, name, addr))?.lockedUntil).toBeNull();
        const waits: number[] = [];
        for (let round = 0; round < 3; round++) {
          if (round) await Bun.sleep(waits.at(-1)! * 1000 + 50); // the lock is over: one more guess is allowed
          expect((await login(t, basic(name, "wrong"), addr)).status).toBe(401);
          waits.push(await lockSeconds());
        }
        expect(waits).toEqual([1, 2, 3]); // 1 × 2^0, 1 × 2^1, min(3, 1 × 2^2)
        expect((await pair(t, name, addr))?.failures).toBe(5);
        expect((await counter(t, "login", name))?.lockedUntil).toBeNull(); // a login name alone never locks
      });
    }, 15_000);

    test("an unknown login is throttled exactly like a known one", async () => {
      const t = get();
      await createUserRow(t.app, { username: "known-user", password: "right" });
      const run = async (name: string) => {
        const addr = freshAddress();
        const statuses = [];
        for (let i = 0; i < 4; i++) statuses.push((await login(t, basic(name, "wrong"), addr)).status);
        const r = await login(t, basic(name, "right"), addr);
        expectThrottled(r, "tokens", 30);
        return {
          statuses: [...statuses, r.status],
          headers: [...r.headers.keys()].filter((k) => k !== "content-length").sort(),
          contentType: r.headers.get("Content-Type"),
        };
      };
      const known = await run("known-user");
      const unknown = await run(`nobody-${uniq()}`);
      expect(known.statuses).toEqual([401, 401, 401, 429, 429]);
      expect(unknown).toEqual(known);
    });

    test("per address: failures on many logins throttle the address, not the same logins elsewhere; loopback is exempt", async () => {
      const t = get();
      const addr = freshAddress();
      await createUserRow(t.app, { username: "bystander", password: "right" });
      for (let i = 0; i < 5; i++) expect((await login(t, basic(`spray-${uniq()}`, "guess"), addr)).status).toBe(401);
      const blocked = await login(t, basic("bystander", "right"), addr);
      expect([blocked.status, blocked.json.error_id]).toEqual([429, "too-many-requests"]);
      expect((await login(t, basic("bystander", "right"), freshAddress())).status).toBe(200);
      expect((await counter(t, "address", addr))?.failures).toBe(5);
      for (let i = 0; i < 6; i++)
        expect((await login(t, basic(`local-${uniq()}`, "guess"), "127.0.0.1")).status).toBe(401);
      expect((await login(t, basic("bystander", "right"), "127.0.0.1")).status).toBe(200);
    });

    test("an IPv6 client counts per /64: hopping through its addresses gains nothing", async () => {
      const t = get();
      const prefix = `2001:db8:${(++addressSeq).toString(16)}:1`;
      for (let i = 1; i <= 5; i++)
        expect((await login(t, basic(`hop-${uniq()}`, "guess"), `${prefix}::${i.toString(16)}`)).status).toBe(401);
      expect((await login(t, basic(`hop-${uniq()}`, "guess"), `${prefix}:ffff:eeee:dddd:cccc`)).status).toBe(429);
      expect((await counter(t, "address", `${prefix}::/64`))?.failures).toBe(5);
      expect(
        (await login(t, basic(`hop-${uniq()}`, "guess"), `2001:db8:${(++addressSeq).toString(16)}:1::1`)).status,
      ).toBe(401); // another /64
    });

    test("a success resets the login's count, not the address's", async () => {
      const t = get();
      const addr = freshAddress();
      await createUserRow(t.app, { username: "forgetful", password: "right" });
      for (let i = 0; i < 2; i++) await login(t, basic("forgetful", "wrong"), addr);
      expect((await login(t, basic("forgetful", "right"), addr)).status).toBe(200);
      for (let i = 0; i < 2; i++) expect((await login(t, basic("forgetful", "wrong"), addr)).status).toBe(401);
      expect((await login(t, basic("forgetful", "right"), addr)).status).toBe(200); // 2 failures since the reset, not 4
      expect((await counter(t, "address", addr))?.failures).toBe(4);
    });

    test("a refused attempt never reaches the password check", async () => {
      const t = get();
      const addr = freshAddress();
      await createUserRow(t.app, { username: "hashless", password: "right" });
      const before = passwordChecks.count;
      for (let i = 0; i < 3; i++) await login(t, basic("hashless", "wrong"), addr);
      expect(passwordChecks.count).toBe(before + 3); // the counting backend is the one in use
      for (let i = 0; i < 20; i++)
        expect((await login(t, basic("hashless", i % 2 ? "right" : "wrong"), addr)).status).toBe(429);
      expect(passwordChecks.count).toBe(before + 3);
      expect((await counter(t, "login", "hashless"))?.failures).toBe(3); // refused attempts are not counted
    });

    test("refresh-token and IdP failures count per address; a throttled login name leaves refresh tokens working", async () => {
      const t = get();
      const addr = freshAddress();
      await createUserRow(t.app, { username: "phone-user", password: "right" });
      const rt = (await login(t, basic("phone-user", "right"), addr, { access_type: "offline", client_id: "phone" }))
        .json.data.refresh_token;
      for (let i = 0; i < 3; i++) await login(t, basic("phone-user", "wrong"), addr);
      expect((await login(t, basic("phone-user", "right"), addr)).status).toBe(429);
      expect((await login(t, null, addr, { refresh_token: rt, client_id: "phone" })).status).toBe(200);
      // Basic credentials beside a refresh token are ignored, and not counted against their login.
      expect(
        (await login(t, basic("rt-bystander", "x"), addr, { refresh_token: crypto.randomUUID(), client_id: "phone" }))
          .status,
      ).toBe(401);
      expect(await counter(t, "login", "rt-bystander")).toBeUndefined();
      expect((await login(t, null, addr, {}, { "X-Test-Idp-Login": "bad-secret:phone-user" })).status).toBe(401);
      expect((await counter(t, "address", addr))?.failures).toBe(5);
      expect((await login(t, null, addr, { refresh_token: rt, client_id: "phone" })).status).toBe(429);
    });

    test("one auth_user_login_throttled event per lock, without the password", async () => {
      const t = get();
      const addr = freshAddress();
      const name = `evented-${uniq()}`;
      const before = (await listRecordedEvents(t.app.db)).length;
      for (let i = 0; i < 3; i++) await login(t, basic(name, "secret-guess"), addr);
      for (let i = 0; i < 5; i++) await login(t, basic(name, "secret-guess"), addr);
      const events = (await listRecordedEvents(t.app.db)).slice(before);
      const throttled = events.filter((e) => e.name === "auth_user_login_throttled");
      expect(throttled).toHaveLength(1);
      expect(throttled[0]!.routingKey).toBe("auth.logins.throttled");
      expect(throttled[0]!.payload.data).toEqual({
        login: name,
        remote_addr: addr,
        retry_after: 30,
        throttled_by: "login_address",
        action: "login",
      });
      expect(throttled[0]!.headers).toMatchObject({
        name: "auth_user_login_throttled",
        required_acl: "events.auth.logins.throttled",
      });
      expect(events.filter((e) => e.name === "auth_user_login_failed")).toHaveLength(3);
      expect(JSON.stringify(events)).not.toContain("secret-guess");
    });

    test("a database error during the check is a 503, counts nothing and derives no password", async () => {
      const t = get();
      const addr = freshAddress();
      const before = passwordChecks.count;
      const events = (await listRecordedEvents(t.app.db)).length;
      await t.app.db.execute(sql`alter table tessera_login_throttle rename to tessera_login_throttle_away`);
      try {
        const r = await login(t, basic("anyone", "pw"), addr);
        expect([r.status, r.json.error_id, r.json.resource]).toEqual([503, "service-unavailable", "tokens"]);
        const reset = await t.request("GET", "/0.1/users/password/reset?login=anyone", { remoteAddr: addr });
        expect([reset.status, reset.json.resource]).toEqual([503, "reset"]);
      } finally {
        await t.app.db.execute(sql`alter table tessera_login_throttle_away rename to tessera_login_throttle`);
      }
      expect(passwordChecks.count).toBe(before);
      expect((await listRecordedEvents(t.app.db)).length).toBe(events);
    });

    test("an outage during the password check is a 503 and not a counted failure", async () => {
      const t = get();
      const addr = freshAddress();
      await createUserRow(t.app, { username: "outaged", password: "right" });
      passwordChecks.closedPort = closedPort();
      for (let i = 0; i < 4; i++) {
        const r = await login(t, basic("outaged", "db-outage"), addr);
        expect([r.status, r.json.error_id]).toEqual([503, "service-unavailable"]);
      }
      expect(await counter(t, "login", "outaged")).toBeUndefined();
      expect((await login(t, basic("outaged", "right"), addr)).status).toBe(200);
    });

    test("password reset requests: throttled per login and per address, the same for unknown logins", async () => {
      const t = get();
      const ask = (q: string, addr: string) => t.request("GET", `/0.1/users/password/reset?${q}`, { remoteAddr: addr });
      await createUserRow(t.app, { username: "resetter", password: "pw" });
      const outcome = async (name: string) => {
        const addr = freshAddress();
        const statuses = [];
        for (let i = 0; i < 2; i++) {
          statuses.push((await ask(`login=${name}`, addr)).status);
          await eventually(
            () => counter(t, "reset_login", name),
            (row) => row?.failures === i + 1,
          ); // counted after answering
        }
        const r = await ask(`username=${name}`, freshAddress());
        expectThrottled(r, "reset", 30);
        return {
          statuses: [...statuses, r.status],
          headers: [...r.headers.keys()].filter((k) => k !== "content-length").sort(),
        };
      };
      const known = await outcome("resetter");
      expect(known.statuses).toEqual([204, 204, 429]);
      expect(await outcome(`nobody${uniq()}`)).toEqual(known);

      const addr = freshAddress();
      for (let i = 0; i < 4; i++) expect((await ask(`login=spray${uniq()}`, addr)).status).toBe(204);
      await eventually(
        () => counter(t, "reset_address", addr),
        (row) => row?.lockedUntil != null,
      );
      expect((await ask(`login=fresh${uniq()}`, addr)).status).toBe(429);
      const events = (await listRecordedEvents(t.app.db)).filter(
        (e) => e.name === "auth_user_login_throttled" && e.payload.data.action === "password_reset",
      );
      expect(events.map((e) => e.payload.data.throttled_by).sort()).toEqual(["address", "login", "login"]);
    });

    test("the cleanup job forgets quiet counters and keeps locked ones", async () => {
      const t = get();
      const stale = freshAddress();
      const locked = freshAddress();
      for (let i = 0; i < 5; i++) await login(t, basic(`purge-${uniq()}`, "x"), i < 1 ? stale : locked);
      await t.app.db.update(loginThrottle).set({ lastFailureAt: sql`now() - interval '13 hours'` });
      await t.app.db
        .update(loginThrottle)
        .set({ lockedUntil: sql`now() + interval '1 hour'` })
        .where(eq(loginThrottle.key, locked));
      const { throttleCounters } = await runCleanup(t.app);
      expect(throttleCounters).toBeGreaterThanOrEqual(2);
      expect(await counter(t, "address", stale)).toBeUndefined();
      expect((await counter(t, "address", locked))?.failures).toBe(4);
    });

    test("disabled by configuration: nothing is counted or refused", async () => {
      const t = get();
      const addr = freshAddress();
      await createUserRow(t.app, { username: "unguarded", password: "right" });
      t.app.config.login_throttling.enabled = false;
      try {
        for (let i = 0; i < 6; i++) expect((await login(t, basic("unguarded", "wrong"), addr)).status).toBe(401);
        expect((await login(t, basic("unguarded", "right"), addr)).status).toBe(200);
        for (let i = 0; i < 4; i++)
          expect(
            (await t.request("GET", "/0.1/users/password/reset?login=unguarded", { remoteAddr: addr })).status,
          ).toBe(204);
        expect(await counter(t, "address", addr)).toBeUndefined();
      } finally {
        t.app.config.login_throttling.enabled = true;
      }
    });
  },
  { config },
);

const sharedConfig = config;
describe.skipIf(!process.env.TEST_DATABASE_URL)(
  "login throttling on two instances sharing one PostgreSQL [postgres]",
  () => {
    test("counters are shared, concurrent failures are all counted, and one lock gives one event", async () => {
      // A long wait, so no lock can expire (and a second one start) while the storm is in flight.
      const config = {
        ...sharedConfig,
        login_throttling: { ...sharedConfig.login_throttling, wait_increment_seconds: 30, max_wait_seconds: 60 },
      };
      const first = await createTestApp("postgres", { config });
      const [{ name }] = (await first.app.db.execute(sql`select current_database() as name`)) as unknown as [
        { name: string },
      ];
      const url = new URL(process.env.TEST_DATABASE_URL!);
      url.pathname = `/${name}`;
      const secondCtx = await buildContext(
        parseConfig({ ...config, password_hash_iterations: 1000, token_cleanup_interval: 0 }),
        await openDatabase({ url: url.toString(), poolSize: 3 }),
        silentLogger,
      );
      await startServices(secondCtx);
      const secondHttp = createApp(secondCtx);
      const onSecond = async (auth: string, addr: string) =>
        await secondHttp.request(
          "/0.1/token",
          { method: "POST", headers: { Authorization: auth }, body: "{}" },
          { remoteAddr: addr },
        );
      try {
        const shared = await createUserRow(first.app, { username: "shared", password: "right" });
        const addr = freshAddress();
        expect((await login(first, basic("shared", "wrong"), addr)).status).toBe(401);
        expect((await onSecond(basic("shared", "wrong"), addr)).status).toBe(401);
        expect((await login(first, basic("shared", "wrong"), addr)).status).toBe(401);
        const r = await onSecond(basic("shared", "right"), addr); // locked by the first instance's failure
        expectThrottled({ status: r.status, headers: r.headers, json: await r.json() }, "tokens", 30);
        // The second instance now remembers the lock; an unlock on the first reaches it (NOTIFY).
        expect((await onSecond(basic("shared", "right"), addr)).status).toBe(429);
        const admin = (await tokenFor(first.app, { acl: ["auth.#"] })).token;
        expect((await first.request("DELETE", `/0.1/users/${shared}/login-failures`, { token: admin })).status).toBe(
          204,
        );
        expect(
          await eventually(
            async () => (await onSecond(basic("shared", "right"), addr)).status,
            (s) => s === 200,
          ),
        ).toBe(200);

        const storm = `storm-${uniq()}`;
        const stormAddr = freshAddress();
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            i % 2
              ? onSecond(basic(storm, "guess"), stormAddr).then((x) => x.status)
              : login(first, basic(storm, "guess"), stormAddr).then((x) => x.status),
          ),
        );
        const failed = results.filter((s) => s === 401).length;
        expect(failed + results.filter((s) => s === 429).length).toBe(12);
        expect((await counter(first, "login", storm))?.failures).toBe(failed); // every 401 was counted
        expect((await pair(first, storm, stormAddr))?.failures).toBe(failed);
        const events = (await listRecordedEvents(first.app.db)).filter(
          (e) =>
            e.name === "auth_user_login_throttled" &&
            e.payload.data.login === storm &&
            e.payload.data.throttled_by === "login_address",
        );
        expect(events).toHaveLength(1);
      } finally {
        await closeContext(secondCtx);
        await first.close();
      }
    }, 60_000);
  },
);
