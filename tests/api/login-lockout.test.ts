// The attacker's view of login throttling (issue 22): nobody can lock another user out. A flood of
// wrong passwords for `admin` from many addresses locks the flooding addresses, slows the login,
// and never stops `admin` logging in from a clean address; an administrator's unlock lifts the
// user's locks at once, only within its tenant, evented.
import { expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { emails, loginThrottle } from "../../src/db/schema.ts";
import { pairKey } from "../../src/services/auth/login-throttle.ts";
import { addressKey } from "../../src/services/auth/throttle-keys.ts";
import { listRecordedEvents } from "../../src/services/events.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";

const basic = (login: string, password: string) => `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`;
let seq = 0;
const freshAddress = () => `203.0.113.${++seq}`;
const uniq = () => crypto.randomUUID().slice(0, 8);
const SLOWDOWN = 0.2;

const config = {
  password_hash_iterations: 1000,
  login_throttling: {
    max_failures: 3,
    max_failures_per_address: 50,
    max_failures_per_login: 12,
    slowdown_seconds: SLOWDOWN,
    wait_increment_seconds: 30,
    max_wait_seconds: 120,
  },
};

const login = (t: TestApp, name: string, password: string, addr: string) =>
  t.request("POST", "/0.1/token", { body: {}, remoteAddr: addr, headers: { Authorization: basic(name, password) } });

const throttleRows = async (t: TestApp) =>
  (await t.app.db.select().from(loginThrottle)).map((r) => `${r.kind} ${r.key} ${r.failures}`).sort();

describeEachDb(
  "nobody can lock a user out",
  (get) => {
    test("a flood of wrong passwords for admin from many addresses never stops admin logging in from a clean one; the flooders are locked", async () => {
      const t = get();
      await createUserRow(t.app, { username: "admin", password: "the-right-one" });
      const flooders = Array.from({ length: 8 }, freshAddress);
      const statuses: number[] = [];
      for (const addr of flooders)
        for (let i = 0; i < 4; i++) statuses.push((await login(t, "ADMIN", `guess-${i}`, addr)).status);
      // The first flooders get 3 guesses, then 429; past the ceiling (12) a pair locks at its first failure.
      expect(statuses.slice(0, 16)).toEqual([
        401, 401, 401, 429, 401, 401, 401, 429, 401, 401, 401, 429, 401, 401, 401, 429,
      ]);
      expect(statuses.slice(16)).toEqual([
        401, 429, 429, 429, 401, 429, 429, 429, 401, 429, 429, 429, 401, 429, 429, 429,
      ]);
      // Every flooding address is locked out of admin, the right password too.
      for (const addr of flooders) expect((await login(t, "admin", "the-right-one", addr)).status).toBe(429);
      // The real admin, from a clean address, logs in (slowed, never refused), and that clears the flood's count.
      const started = performance.now();
      const ok = await login(t, "admin", "the-right-one", freshAddress());
      expect(ok.status).toBe(200);
      expect(performance.now() - started).toBeGreaterThanOrEqual(SLOWDOWN * 1000 * 0.9);
      const [row] = await t.app.db
        .select()
        .from(loginThrottle)
        .where(and(eq(loginThrottle.kind, "login"), eq(loginThrottle.key, "admin")));
      expect(row).toBeUndefined();
      // The flooders stay locked: a success elsewhere does not wash their pairs.
      expect((await login(t, "admin", "the-right-one", flooders[0]!)).status).toBe(429);
      const slowed = (await listRecordedEvents(t.app.db)).filter(
        (e) => e.name === "auth_user_login_throttled" && e.payload.data.throttled_by === "login",
      );
      expect(slowed.map((e) => e.payload.data.retry_after)).toEqual([null]); // once, when the ceiling was reached
    });

    test("a login name alone is never locked, for known and unknown logins alike", async () => {
      const t = get();
      const known = `known-${uniq()}`;
      await createUserRow(t.app, { username: known, password: "pw" });
      for (const name of [known, `ghost-${uniq()}`]) {
        for (let i = 0; i < 15; i++) await login(t, name, "wrong", freshAddress());
        const [row] = await t.app.db
          .select()
          .from(loginThrottle)
          .where(and(eq(loginThrottle.kind, "login"), eq(loginThrottle.key, name)));
        expect([row?.failures, row?.lockedUntil]).toEqual([15, null]);
        expect((await login(t, name, name === known ? "pw" : "wrong", freshAddress())).status).toBe(
          name === known ? 200 : 401,
        );
      }
    });

    test("DELETE /users/{u}/login-failures lifts the user's locks at once (username and email logins), keeps address locks, and is evented", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const name = `locked-${uniq()}`;
      const user = await createUserRow(t.app, { username: name, password: "pw", tenantUuid: tenant });
      await t.app.db
        .insert(emails)
        .values({ address: `${name}@example.com`, main: true, confirmed: true, userUuid: user });
      const home = freshAddress();
      for (let i = 0; i < 3; i++) await login(t, name, "typo", home);
      for (let i = 0; i < 3; i++) await login(t, `${name}@EXAMPLE.com`, "typo", home);
      expect((await login(t, name, "pw", home)).status).toBe(429); // now remembered by this instance too
      expect((await login(t, `${name}@example.com`, "pw", home)).status).toBe(429);
      const other = `bystander-${uniq()}`;
      for (let i = 0; i < 3; i++) await login(t, other, "x", home);

      const admin = (await tokenFor(t.app, { acl: [`auth.users.${user}.login-failures.delete`], tenantUuid: tenant }))
        .token;
      const before = (await listRecordedEvents(t.app.db)).length;
      const r = await t.request("DELETE", `/0.1/users/${user}/login-failures`, { token: admin });
      expect([r.status, r.text]).toEqual([204, ""]);
      expect((await login(t, name, "pw", home)).status).toBe(200);
      expect((await login(t, `${name}@example.com`, "pw", home)).status).toBe(200);
      expect((await login(t, other, "x", home)).status).toBe(429); // someone else's lock stays
      const [event] = (await listRecordedEvents(t.app.db))
        .slice(before)
        .filter((e) => e.name === "auth_user_login_failures_deleted");
      expect(event?.routingKey).toBe(`auth.users.${user}.login_failures.deleted`);
      expect(event?.payload.data).toMatchObject({ user_uuid: user, tenant_uuid: tenant, counters_cleared: 4 });
    });

    test("unlock: another tenant's administrator (auth.#) changes nothing and learns nothing; no ACL is 403", async () => {
      const t = get();
      const [mine, theirs] = [await createTenantRow(t.app), await createTenantRow(t.app)];
      const user = await createUserRow(t.app, { username: `victim-${uniq()}`, password: "pw", tenantUuid: mine });
      const addr = freshAddress();
      const name = (await t.app.db.query.users.findFirst({ where: (u, { eq }) => eq(u.uuid, user) }))!.username!;
      for (let i = 0; i < 3; i++) await login(t, name, "bad", addr);
      const snapshot = await throttleRows(t);
      const events = (await listRecordedEvents(t.app.db)).length;
      const hostile = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: theirs })).token;
      const absent = await t.request("DELETE", `/0.1/users/${crypto.randomUUID()}/login-failures`, { token: hostile });
      const foreign = await t.request("DELETE", `/0.1/users/${user}/login-failures`, { token: hostile });
      expect([foreign.status, foreign.text]).toEqual([absent.status, absent.text]); // D4 of docs/wazo-auth-differences.md: 204 either way
      const scoped = await t.request("DELETE", `/0.1/users/${user}/login-failures`, { token: hostile, tenant: mine });
      expect(scoped.status).toBe(401); // Wazo-Tenant outside its tree
      const bare = (await tokenFor(t.app, { acl: ["auth.users.read"], tenantUuid: mine })).token;
      expect((await t.request("DELETE", `/0.1/users/${user}/login-failures`, { token: bare })).json.error_id).toBe(
        "forbidden",
      );
      expect(await throttleRows(t)).toEqual(snapshot);
      expect((await listRecordedEvents(t.app.db)).length).toBe(events);
      expect(
        (
          await t.app.db
            .select()
            .from(loginThrottle)
            .where(eq(loginThrottle.key, pairKey(name, addressKey(addr))))
        ).length,
      ).toBe(1);
    });
  },
  { config },
);
