import { expect, test } from "bun:test";
import { eq, inArray } from "drizzle-orm";
import { sessions, tokens, userPolicies, users } from "../src/db/schema.ts";
import { runCleanup } from "../src/jobs.ts";
import { bootstrapUser } from "../src/services/identity/bootstrap.ts";
import { listRecordedEvents } from "../src/services/events.ts";
import { describeEachDb } from "./helpers/app.ts";
import { tokenFor } from "./helpers/fixtures.ts";

const now = () => Math.floor(Date.now() / 1000);

describeEachDb("expired-token purge and expire-soon notices (§5.7)", (get) => {
  test("expired tokens go with their sessions, in batches, one event per session", async () => {
    const t = get();
    t.app.config.token_cleanup_batch_size = 2;
    t.app.config.token_cleanup_interval = 60;
    const expired = await Promise.all([1, 2, 3].map(() => tokenFor(t.app, { acl: ["#"] })));
    const alive = await tokenFor(t.app, { acl: ["#"], expiration: 3600 });
    await t.app.db.update(tokens).set({ expireT: now() - 10 }).where(inArray(tokens.uuid, expired.map((e) => e.token)));
    const before = (await listRecordedEvents(t.app.db)).length;
    const result = await runCleanup(t.app);
    expect(result.purged).toBe(3);
    const left = await t.app.db.select().from(sessions).where(inArray(sessions.uuid, expired.map((e) => e.sessionUuid)));
    expect(left).toEqual([]);
    expect((await t.app.db.select().from(tokens).where(eq(tokens.uuid, alive.token))).length).toBe(1);
    const events = (await listRecordedEvents(t.app.db)).slice(before).filter((e) => e.name === "auth_session_deleted");
    expect(events.map((e) => e.payload.data.uuid).sort()).toEqual(expired.map((e) => e.sessionUuid).sort());
    expect(events[0]!.routingKey).toMatch(/^auth\.sessions\.[0-9a-f-]{36}\.deleted$/);
  });

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

describeEachDb("bootstrap", (get) => {
  test("creates an internal master-tenant user holding the master policy, idempotently, who can log in", async () => {
    const t = get();
    const first = await bootstrapUser(t.app, "root", "pa55");
    expect(first.created).toBe(true);
    const again = await bootstrapUser(t.app, "ROOT", "other");
    expect(again).toEqual({ userUuid: first.userUuid, created: false });
    const [u] = await t.app.db.select().from(users).where(eq(users.uuid, first.userUuid));
    expect(u).toMatchObject({ purpose: "internal", authenticationMethod: "native", tenantUuid: t.app.topTenantUuid });
    expect(u!.passwordHash).toMatch(/^\$argon2id\$/); // the configured algorithm (argon2id by default)
    expect((await t.app.db.select().from(userPolicies).where(eq(userPolicies.userUuid, first.userUuid))).length).toBe(1);
    const r = await t.request("POST", "/0.1/token", { body: {}, headers: { Authorization: `Basic ${btoa("root:pa55")}` } });
    expect(r.status).toBe(200);
    expect(r.json.data.acl).toEqual(["#"]);
    expect(r.json.data.metadata.purpose).toBe("internal");
  });
}, { config: { bootstrap_user_on_startup: false } });

describeEachDb("bootstrap_user_on_startup", (get) => {
  test("the configured user exists once the app has started", async () => {
    const t = get();
    const [u] = await t.app.db.select().from(users).where(eq(users.username, "boot"));
    expect(u?.purpose).toBe("internal");
  });
}, { config: { bootstrap_user_on_startup: true, bootstrap_user_username: "boot", bootstrap_user_password: "pw" } });
