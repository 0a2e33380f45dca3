import { expect, test } from "bun:test";
import { listRecordedEvents } from "../../src/services/events.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";

const basic = (l: string, p: string) => ({ Authorization: `Basic ${btoa(`${l}:${p}`)}` });

describeEachDb("sessions and refresh tokens through the API", (get) => {
  async function world() {
    const t = get();
    const parent = await createTenantRow(t.app);
    const child = await createTenantRow(t.app, { parentUuid: parent });
    const sibling = await createTenantRow(t.app);
    const name = `u${crypto.randomUUID().slice(0, 8)}`;
    const user = await createUserRow(t.app, { tenantUuid: child, username: name, password: "pw" });
    const login = async (body: unknown = {}, headers: Record<string, string> = {}) =>
      (await t.request("POST", "/0.1/token", { body, headers: { ...basic(name, "pw"), ...headers } })).json.data;
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: parent })).token;
    const childAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: child })).token;
    const outsider = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: sibling })).token;
    return { t, parent, child, sibling, user, name, login, admin, childAdmin, outsider };
  }

  test("GET /0.1/sessions: scoping tenant, recurse, Wazo-Tenant, isolation", async () => {
    const w = await world();
    const s = await w.login({}, { "Wazo-Session-Type": "mobile" });
    let r = await w.t.request("GET", "/0.1/sessions", { token: w.admin });
    expect(r.json.items.find((i: { uuid: string }) => i.uuid === s.session_uuid)).toBeUndefined();
    r = await w.t.request("GET", "/0.1/sessions?recurse=true", { token: w.admin });
    expect(r.json.items.find((i: { uuid: string }) => i.uuid === s.session_uuid)).toEqual({
      uuid: s.session_uuid,
      mobile: true,
      tenant_uuid: w.child,
      user_uuid: w.user,
    });
    expect(r.json.filtered).toBe(r.json.total);
    r = await w.t.request("GET", "/0.1/sessions", { token: w.admin, tenant: w.child });
    expect(r.json.items.map((i: { uuid: string }) => i.uuid)).toContain(s.session_uuid);
    r = await w.t.request("GET", "/0.1/sessions?recurse=true", { token: w.outsider });
    expect(r.json.items.map((i: { uuid: string }) => i.uuid)).not.toContain(s.session_uuid);
    r = await w.t.request("GET", "/0.1/sessions", { token: w.outsider, tenant: w.child });
    expect([r.status, r.json.error_id]).toEqual([401, "unauthorized-tenant"]);
    r = await w.t.request("GET", "/0.1/sessions", { token: w.childAdmin, tenant: w.parent });
    expect(r.status).toBe(401);
    r = await w.t.request("GET", "/0.1/sessions?order=uuid", { token: w.admin });
    expect([r.status, r.json.details.order.constraint_id]).toEqual([400, "enum"]);
    r = await w.t.request("GET", "/0.1/sessions?limit=-1", { token: w.admin });
    expect(r.status).toBe(400);
  });

  test("DELETE /0.1/sessions/{s}: an outsider's delete is a no-op; the admin's revokes the token", async () => {
    const w = await world();
    const s = await w.login();
    expect((await w.t.request("DELETE", `/0.1/sessions/${s.session_uuid}`, { token: w.outsider })).status).toBe(204);
    expect((await w.t.request("HEAD", `/0.1/token/${s.token}`)).status).toBe(204);
    expect((await w.t.request("DELETE", `/0.1/sessions/${s.session_uuid}`, { token: w.admin })).status).toBe(204);
    expect((await w.t.request("HEAD", `/0.1/token/${s.token}`)).status).toBe(404);
    expect((await w.t.request("DELETE", `/0.1/sessions/${s.session_uuid}`, { token: w.admin })).status).toBe(204);
    const deleted = (await listRecordedEvents(w.t.app.db)).filter(
      (e) => e.name === "auth_session_deleted" && e.payload.data.uuid === s.session_uuid,
    );
    expect(deleted.length).toBe(1);
    expect(deleted[0]!.payload.data).toEqual({ uuid: s.session_uuid, user_uuid: w.user, tenant_uuid: w.child });
  });

  test("/users/{u}/sessions: list and delete only that user's sessions, only when visible", async () => {
    const w = await world();
    const s = await w.login();
    const other = await tokenFor(w.t.app, { acl: [], tenantUuid: w.child });
    let r = await w.t.request("GET", `/0.1/users/${w.user}/sessions`, { token: w.admin });
    expect(r.status).toBe(200);
    expect(r.json.items.map((i: { uuid: string }) => i.uuid)).toEqual([s.session_uuid]);
    r = await w.t.request("GET", `/0.1/users/${w.user}/sessions`, { token: w.outsider });
    expect([r.status, r.json.error_id, r.json.resource]).toEqual([404, "not-found", "users"]);
    // a session of another user cannot be deleted through this user (D9 of docs/wazo-auth-differences.md)
    expect(
      (await w.t.request("DELETE", `/0.1/users/${w.user}/sessions/${other.sessionUuid}`, { token: w.admin })).status,
    ).toBe(204);
    expect((await w.t.request("HEAD", `/0.1/token/${other.token}`)).status).toBe(204);
    // an outsider's delete is a no-op with the same answer as an absent session (D4 of docs/wazo-auth-differences.md, D9)
    expect(
      (await w.t.request("DELETE", `/0.1/users/${w.user}/sessions/${s.session_uuid}`, { token: w.outsider })).status,
    ).toBe(204);
    expect((await w.t.request("HEAD", `/0.1/token/${s.token}`)).status).toBe(204);
    expect(
      (await w.t.request("DELETE", `/0.1/users/${w.user}/sessions/${s.session_uuid}`, { token: w.admin })).status,
    ).toBe(204);
    expect((await w.t.request("HEAD", `/0.1/token/${s.token}`)).status).toBe(404);
  });

  test("refresh tokens: list per tenant and per user (me too), delete by client id, isolation", async () => {
    const w = await world();
    const first = await w.login({ access_type: "offline", client_id: "my.app" });
    await w.login({ access_type: "offline", client_id: "other" });
    let r = await w.t.request("GET", `/0.1/users/${w.user}/tokens?order=client_id&direction=desc`, { token: w.admin });
    expect(r.status).toBe(200);
    expect(r.json.items.map((i: { client_id: string }) => i.client_id)).toEqual(["other", "my.app"]);
    expect(r.json.items[1]).toMatchObject({ mobile: false, user_uuid: w.user, tenant_uuid: w.child, metadata: {} });
    expect(r.json.items[1].created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/);
    expect(JSON.stringify(r.json)).not.toContain(first.refresh_token);
    r = await w.t.request("GET", `/0.1/users/${w.user}/tokens?search=my`, { token: w.admin });
    expect([r.json.filtered, r.json.total]).toEqual([1, 2]);
    r = await w.t.request("GET", "/0.1/tokens?recurse=true&client_id=other", { token: w.admin });
    expect(r.json.items.map((i: { user_uuid: string }) => i.user_uuid)).toEqual([w.user]);
    r = await w.t.request("GET", "/0.1/tokens?recurse=true", { token: w.outsider });
    expect(r.json.items.filter((i: { user_uuid: string }) => i.user_uuid === w.user)).toEqual([]);
    expect((await w.t.request("GET", `/0.1/users/${w.user}/tokens`, { token: w.outsider })).status).toBe(404);
    expect((await w.t.request("DELETE", `/0.1/users/${w.user}/tokens/my.app`, { token: w.outsider })).status).toBe(204); // touches nothing (D4 of docs/wazo-auth-differences.md, D9)
    // the user itself, through `me`
    const own = await w.login();
    r = await w.t.request("GET", "/0.1/users/me/tokens", { token: own.token });
    expect(r.status).toBe(403); // the user's token holds no ACL
    const selfToken = (
      await tokenFor(w.t.app, { acl: ["auth.users.me.tokens.#"], tenantUuid: w.child, userUuid: w.user })
    ).token;
    r = await w.t.request("GET", "/0.1/users/me/tokens", { token: selfToken });
    expect([r.status, r.json.total]).toEqual([200, 2]);
    expect((await w.t.request("DELETE", "/0.1/users/me/tokens/my.app", { token: selfToken })).status).toBe(204);
    expect((await w.t.request("DELETE", "/0.1/users/me/tokens/my.app", { token: selfToken })).status).toBe(204);
    r = await w.t.request("GET", `/0.1/users/${w.user}/tokens`, { token: w.admin });
    expect(r.json.items.map((i: { client_id: string }) => i.client_id)).toEqual(["other"]);
    // sessions issued from a deleted refresh token stay valid (§5.6)
    expect((await w.t.request("HEAD", `/0.1/token/${first.token}`)).status).toBe(204);
    const deleted = (await listRecordedEvents(w.t.app.db)).filter((e) => e.name === "auth_refresh_token_deleted");
    expect(deleted.at(-1)?.routingKey).toBe(`auth.users.${w.user}.tokens.my__DOT__app.deleted`);
  });
});
