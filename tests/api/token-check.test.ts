import { expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import { sessions, tokens } from "../../src/db/schema.ts";
import { INTERNAL_AUTH_ID, insertToken } from "../../src/services/auth/tokens.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, tokenFor } from "../helpers/fixtures.ts";

describeEachDb("token check, read and revoke (§5.4)", (get) => {
  test("HEAD: 204 when valid, 403 when the scope is not granted, 404 when unknown; no body", async () => {
    const t = get();
    const { token } = await tokenFor(t.app, { acl: ["confd.users.me.read", "!confd.users.me.delete"] });
    let r = await t.request("HEAD", `/0.1/token/${token}?scope=confd.users.me.read`);
    expect([r.status, r.text]).toEqual([204, ""]);
    r = await t.request("HEAD", `/0.1/token/${token}?scope=confd.users.me.delete`);
    expect([r.status, r.text]).toEqual([403, ""]);
    r = await t.request("HEAD", `/0.1/token/${crypto.randomUUID()}`);
    expect([r.status, r.text]).toEqual([404, ""]);
    r = await t.request("HEAD", `/0.1/token/abcdef`);
    expect(r.status).toBe(404);
    // `scope=` is the empty access: only # or * patterns match it
    expect((await t.request("HEAD", `/0.1/token/${token}?scope=`)).status).toBe(403);
  });

  test("GET returns the token; errors use the one body", async () => {
    const t = get();
    const { token, userUuid, sessionUuid } = await tokenFor(t.app, { acl: ["a.b"] });
    const r = await t.request("GET", `/0.1/token/${token}?scope=a.b`);
    expect(r.status).toBe(200);
    expect(r.json.data.token).toBe(token);
    expect(r.json.data.auth_id).toBe(userUuid);
    expect(r.json.data.session_uuid).toBe(sessionUuid);
    expect(r.json.data.issued_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
    const denied = await t.request("GET", `/0.1/token/${token}?scope=a.c`);
    expect(denied.status).toBe(403);
    expect(denied.json).toMatchObject({
      error_id: "forbidden-access",
      message: "Unauthorized for a.c",
      resource: "tokens",
      details: { required_access: "a.c" },
    });
    const missing = await t.request("GET", `/0.1/token/${crypto.randomUUID()}`);
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ error_id: "not-found", message: "No such token", resource: "tokens" });
    expect(typeof missing.json.timestamp).toBe("number");
  });

  test("tenant: the user's tenant or a descendant passes, a sibling is refused, internal tokens skip it", async () => {
    const t = get();
    const parent = await createTenantRow(t.app);
    const child = await createTenantRow(t.app, { parentUuid: parent });
    const sibling = await createTenantRow(t.app);
    const { token } = await tokenFor(t.app, { acl: ["#"], tenantUuid: parent });
    expect((await t.request("HEAD", `/0.1/token/${token}?tenant=${parent}`)).status).toBe(204);
    expect((await t.request("HEAD", `/0.1/token/${token}?tenant=${child}`)).status).toBe(204);
    const refused = await t.request("GET", `/0.1/token/${token}?tenant=${sibling}`);
    expect(refused.status).toBe(403);
    expect(refused.json.message).toBe(`Unauthorized for tenant ${sibling}`);
    const childToken = (await tokenFor(t.app, { acl: ["#"], tenantUuid: child })).token;
    expect((await t.request("HEAD", `/0.1/token/${childToken}?tenant=${parent}`)).status).toBe(403);
    const internal = await insertToken(t.app, t.app.db, {
      authId: INTERNAL_AUTH_ID,
      pbxUserUuid: null,
      acl: [],
      metadata: { tenant_uuid: t.app.topTenantUuid },
      expiration: 60,
      userAgent: "wazo-auth-internal",
      remoteAddr: "127.0.0.1",
      sessionTenantUuid: t.app.topTenantUuid,
      mobile: false,
    });
    expect((await t.request("HEAD", `/0.1/token/${internal.record.uuid}?tenant=${sibling}`)).status).toBe(204);
  });

  test("the tenant= check answers from memory and follows changes of the tree", async () => {
    const t = get();
    const a = await createTenantRow(t.app);
    const b = await createTenantRow(t.app);
    const child = await createTenantRow(t.app, { parentUuid: a });
    const { token } = await tokenFor(t.app, { acl: ["#"], tenantUuid: a });
    const master = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
    expect((await t.request("HEAD", `/0.1/token/${token}?tenant=${child}`)).status).toBe(204);
    // moved away through the API: the writing instance sees it at once
    expect((await t.request("PUT", `/0.1/tenants/${child}/parent/${b}`, { token: master })).status).toBe(204);
    expect((await t.request("HEAD", `/0.1/token/${token}?tenant=${child}`)).status).toBe(403);
    // moved back directly in the database (another instance, say): the NOTIFY reaches this one
    await t.app.db.execute(sql`update auth_tenant set parent_uuid = ${a} where uuid = ${child}`);
    let status = 0;
    for (let i = 0; i < 50 && status !== 204; i++) {
      status = (await t.request("HEAD", `/0.1/token/${token}?tenant=${child}`)).status;
      if (status !== 204) await Bun.sleep(20);
    }
    expect(status).toBe(204);
  });

  test("an expired token is unknown", async () => {
    const t = get();
    const { token } = await tokenFor(t.app, { acl: ["#"] });
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(204);
    await t.app.db
      .update(tokens)
      .set({ expireT: Math.floor(Date.now() / 1000) - 1 })
      .where(eq(tokens.uuid, token));
    t.app.tokenCache.clear();
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
  });

  test("DELETE revokes (always 200); the cache never serves a revoked token", async () => {
    const t = get();
    const { token, sessionUuid } = await tokenFor(t.app, { acl: ["#"] });
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(204); // now cached
    const r = await t.request("DELETE", `/0.1/token/${token}`);
    expect([r.status, r.json]).toEqual([200, { data: { message: "success" } }]);
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
    const [s] = await t.app.db.select().from(sessions).where(eq(sessions.uuid, sessionUuid));
    expect(s).toBeUndefined();
    expect((await t.request("DELETE", `/0.1/token/${token}`)).status).toBe(200);
  });

  test("a session deleted directly in the database reaches the cache through NOTIFY", async () => {
    const t = get();
    const { token, sessionUuid } = await tokenFor(t.app, { acl: ["#"] });
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(204);
    expect(t.app.tokenCache.get(token)).toBeDefined();
    await t.app.db.execute(sql`delete from auth_session where uuid = ${sessionUuid}`);
    for (let i = 0; i < 50 && t.app.tokenCache.get(token); i++) await Bun.sleep(20);
    expect(t.app.tokenCache.get(token)).toBeUndefined();
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
  });

  test("scopes/check answers per scope; tenant and body checked", async () => {
    const t = get();
    const sibling = await createTenantRow(t.app);
    const { token } = await tokenFor(t.app, { acl: ["confd.users.me.read"] });
    let r = await t.request("POST", `/0.1/token/${token}/scopes/check`, {
      body: { scopes: ["confd.users.me.read", "auth.users.read", "auth.users.read"] },
    });
    expect([r.status, r.json]).toEqual([200, { scopes: { "confd.users.me.read": true, "auth.users.read": false } }]);
    r = await t.request("POST", `/0.1/token/${token}/scopes/check`, { body: { scopes: [] } });
    expect(r.json).toEqual({ scopes: {} });
    const tenantUser = (await tokenFor(t.app, { acl: ["a"], tenantUuid: await createTenantRow(t.app) })).token;
    r = await t.request("POST", `/0.1/token/${tenantUser}/scopes/check`, {
      body: { scopes: ["a"], tenant_uuid: sibling },
    });
    expect(r.status).toBe(403);
    r = await t.request("POST", `/0.1/token/${token}/scopes/check`, { body: { scopes: [1] } });
    expect(r.status).toBe(400);
    expect(r.json.details.scopes["0"].constraint_id).toBe("type");
    r = await t.request("POST", `/0.1/token/${token}/scopes/check`, { body: {} });
    expect(r.status).toBe(400);
    expect(r.json.details.scopes.constraint_id).toBe("required");
    r = await t.request("POST", `/0.1/token/${crypto.randomUUID()}/scopes/check`, { body: { scopes: [] } });
    expect(r.status).toBe(404);
  });

  test("Authorization: Bearer works like X-Auth-Token; missing token 401, missing ACL 403", async () => {
    const t = get();
    const { token } = await tokenFor(t.app, { acl: ["auth.status.read"] });
    let r = await t.request("GET", "/0.1/status", { headers: { Authorization: `Bearer ${token}` } });
    expect(r.status).toBe(200);
    r = await t.request("GET", "/0.1/status");
    expect(r.status).toBe(401);
    expect(r.json).toMatchObject({
      error_id: "unauthorized",
      resource: "tokens",
      details: { reason: "not_found_or_expired", required_access: "auth.status.read" },
    });
    const weak = (await tokenFor(t.app, { acl: ["other"] })).token;
    r = await t.request("GET", "/0.1/status", { token: weak });
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ error_id: "forbidden", details: { required_access: "auth.status.read" } });
  });
});
