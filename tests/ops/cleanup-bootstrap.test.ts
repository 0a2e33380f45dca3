import { expect, test } from "bun:test";
import { eq, inArray, sql } from "drizzle-orm";
import { sessions, tokens, userPolicies, users } from "../../src/db/schema.ts";
import { runCleanup, startJobs } from "../../src/boot/jobs.ts";
import { bootstrapUser } from "../../src/services/identity/bootstrap.ts";
import { listRecordedEvents } from "../../src/services/events.ts";
import { describeEachDb } from "../helpers/app.ts";
import { tokenFor } from "../helpers/fixtures.ts";

const now = () => Math.floor(Date.now() / 1000);

describeEachDb("expired-token purge and expire-soon notices (§5.7)", (get) => {
  test("expired tokens go with their sessions, in batches, one event per session", async () => {
    const t = get();
    t.app.config.token_cleanup_batch_size = 2;
    t.app.config.token_cleanup_interval = 60;
    const expired = await Promise.all([1, 2, 3].map(() => tokenFor(t.app, { acl: ["#"] })));
    const alive = await tokenFor(t.app, { acl: ["#"], expiration: 3600 });
    await t.app.db
      .update(tokens)
      .set({ expireT: now() - 10 })
      .where(
        inArray(
          tokens.uuid,
          expired.map((e) => e.token),
        ),
      );
    const before = (await listRecordedEvents(t.app.db)).length;
    const result = await runCleanup(t.app);
    expect(result.purged).toBe(3);
    const left = await t.app.db
      .select()
      .from(sessions)
      .where(
        inArray(
          sessions.uuid,
          expired.map((e) => e.sessionUuid),
        ),
      );
    expect(left).toEqual([]);
    expect((await t.app.db.select().from(tokens).where(eq(tokens.uuid, alive.token))).length).toBe(1);
    const events = (await listRecordedEvents(t.app.db)).slice(before).filter((e) => e.name === "auth_session_deleted");
    expect(events.map((e) => e.payload.data.uuid).sort()).toEqual(expired.map((e) => e.sessionUuid).sort());
    expect(events[0]!.routingKey).toMatch(/^auth\.sessions\.[0-9a-f-]{36}\.deleted$/);
  });

  test("a batch of 12,000 expired sessions records its 12,000 events in a few multi-row inserts", async () => {
    const t = get();
    t.app.config.token_cleanup_batch_size = 12_000;
    t.app.config.token_cleanup_interval = 0;
    const user = (await tokenFor(t.app, { acl: [] })).userUuid;
    await t.app.db.execute(
      sql`insert into auth_session (uuid, tenant_uuid) select md5('bulk' || i)::uuid::text, ${t.app.topTenantUuid} from generate_series(1, 12000) i`,
    );
    await t.app.db.execute(sql`insert into auth_token (auth_id, issued_t, expire_t, session_uuid, metadata)
      select ${user}, ${now() - 100}, ${now() - 10}, md5('bulk' || i)::uuid::text, '{}' from generate_series(1, 12000) i`);
    const before = (await listRecordedEvents(t.app.db)).length;
    expect((await runCleanup(t.app)).purged).toBe(12_000);
    const events = (await listRecordedEvents(t.app.db)).slice(before).filter((e) => e.name === "auth_session_deleted");
    expect(new Set(events.map((e) => e.payload.data.uuid)).size).toBe(12_000);
    expect(events.every((e) => e.payload.data.user_uuid === user && e.headers[`user_uuid:${user}`] === true)).toBe(
      true,
    );
  }, 60_000);

  test("tokens expiring within one interval get one expire-soon notice each", async () => {
    const t = get();
    t.app.config.token_cleanup_interval = 60;
    const soon = await tokenFor(t.app, { acl: ["#"], expiration: 30 });
    await tokenFor(t.app, { acl: ["#"], expiration: 3600 });
    const before = (await listRecordedEvents(t.app.db)).length;
    expect((await runCleanup(t.app)).notified).toBe(1);
    expect((await runCleanup(t.app)).notified).toBe(0);
    const [e] = (await listRecordedEvents(t.app.db)).slice(before);
    expect(e!.name).toBe("auth_session_expire_soon");
    expect(e!.routingKey).toBe(`auth.users.${soon.userUuid}.sessions.${soon.sessionUuid}.expire_soon`);
    expect(e!.payload.data).toEqual({ uuid: soon.sessionUuid, user_uuid: soon.userUuid, tenant_uuid: soon.tenantUuid });
    expect(e!.headers[`user_uuid:${soon.userUuid}`]).toBe(true);
  });
});

describeEachDb(
  "bootstrap",
  (get) => {
    test("creates an internal master-tenant user holding the master policy, idempotently, who can log in", async () => {
      const t = get();
      const first = await bootstrapUser(t.app, "root", "pa55");
      expect(first.created).toBe(true);
      const again = await bootstrapUser(t.app, "ROOT", "other");
      expect(again).toEqual({ userUuid: first.userUuid, created: false });
      const [u] = await t.app.db.select().from(users).where(eq(users.uuid, first.userUuid));
      expect(u).toMatchObject({ purpose: "internal", authenticationMethod: "native", tenantUuid: t.app.topTenantUuid });
      expect(u!.passwordHash).toMatch(/^\$argon2id\$/); // the configured algorithm (argon2id by default)
      expect((await t.app.db.select().from(userPolicies).where(eq(userPolicies.userUuid, first.userUuid))).length).toBe(
        1,
      );
      const r = await t.request("POST", "/0.1/token", {
        body: {},
        headers: { Authorization: `Basic ${btoa("root:pa55")}` },
      });
      expect(r.status).toBe(200);
      expect(r.json.data.acl).toEqual(["#"]);
      expect(r.json.data.metadata.purpose).toBe("internal");
    });
  },
  { config: { bootstrap_user_on_startup: false } },
);

describeEachDb(
  "bootstrap_user_on_startup",
  (get) => {
    test("the configured user exists once the app has started", async () => {
      const t = get();
      const [u] = await t.app.db.select().from(users).where(eq(users.username, "boot"));
      expect(u?.purpose).toBe("internal");
    });
  },
  { config: { bootstrap_user_on_startup: true, bootstrap_user_username: "boot", bootstrap_user_password: "pw" } },
);

describeEachDb("the purge's schedule", (get) => {
  test("token_cleanup_interval past a minute schedules the purge (a `*/300` cron pattern was refused at start)", async () => {
    const t = get();
    t.app.config.token_cleanup_interval = 300;
    startJobs(t.app); // threw "steps cannot be greater than maximum value of part (60)"
    expect(t.app.onClose.length).toBeGreaterThan(0);
  });

  test("the purge runs every token_cleanup_interval seconds, the first time one interval after the start", async () => {
    const t = get();
    t.app.config.token_cleanup_interval = 2;
    const expired = await tokenFor(t.app, { acl: ["#"] });
    await t.app.db
      .update(tokens)
      .set({ expireT: now() - 10 })
      .where(eq(tokens.uuid, expired.token));
    startJobs(t.app);
    const gone = async () => (await t.app.db.select().from(tokens).where(eq(tokens.uuid, expired.token))).length === 0;
    await Bun.sleep(900);
    expect(await gone()).toBe(false); // not at the next whole second: a frozen database at start met a purge
    for (let i = 0; i < 80 && !(await gone()); i++) await Bun.sleep(50);
    expect(await gone()).toBe(true);
  });
});
