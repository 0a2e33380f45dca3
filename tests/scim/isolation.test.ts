// The SCIM door's security paths: a token acts in its own tenant only (tenant B's token sees and
// changes nothing of A, not even through a group member reference); a SCIM token reaches nothing
// of the wazo REST API; the grant rule binds memberships; a revoked token is refused at its next
// request; the tokens' administration (shown once, stored hashed, listed, revoked, audited).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { openDatabase } from "../../src/db/index.ts";
import { listRecordedEvents } from "../../src/services/events.ts";
import { execRows } from "../../src/db/index.ts";
import { createTestApp, databaseKinds, describeEachDb, type TestApp } from "../helpers/app.ts";
import { adminToken, createTenantRow, tokenFor } from "../helpers/fixtures.ts";
import { ERROR_SCHEMA, GROUP_SCHEMA, patchOf, scim, scimToken, USER_SCHEMA } from "../helpers/scim.ts";
import { scratchDatabase } from "../helpers/scratch-db.ts";
import { until } from "../helpers/wait.ts";

const newUser = (userName: string, more: Record<string, unknown> = {}) => ({
  schemas: [USER_SCHEMA],
  userName,
  emails: [{ value: `${userName}@example.org`, primary: true }],
  ...more,
});

describeEachDb("SCIM: isolation, tokens and the grant rule", (get) => {
  let master: string;
  let a: { tenant: string; bearer: string; user: string; group: string };
  let b: { tenant: string; bearer: string; user: string; group: string };

  test("setup: tenants A and B, each with a SCIM token, a user and a group", async () => {
    const t = get();
    master = await adminToken(t.app);
    const make = async () => {
      const tenant = await createTenantRow(t.app);
      const bearer = await scimToken(t, master, tenant);
      const user = (await scim(t, bearer, "POST", "/Users", newUser(`u${crypto.randomUUID().slice(0, 8)}`))).json.id;
      const group = (await scim(t, bearer, "POST", "/Groups", { schemas: [GROUP_SCHEMA], displayName: "Staff" })).json
        .id;
      return { tenant, bearer, user, group };
    };
    a = await make();
    b = await make();
    expect(a.user).toBeString();
    expect(b.group).toBeString();
  });

  test("B's token sees nothing of A: lists, reads, filters by id", async () => {
    const t = get();
    const users = await scim(t, b.bearer, "GET", "/Users");
    expect(users.json.Resources.map((u: { id: string }) => u.id)).toEqual([b.user]);
    const groups = await scim(t, b.bearer, "GET", "/Groups");
    expect(groups.json.Resources.map((g: { id: string }) => g.id)).toEqual([b.group]);
    expect((await scim(t, b.bearer, "GET", `/Users/${a.user}`)).status).toBe(404);
    expect((await scim(t, b.bearer, "GET", `/Groups/${a.group}`)).status).toBe(404);
    const byId = await scim(t, b.bearer, "GET", `/Users?filter=${encodeURIComponent(`id eq "${a.user}"`)}`);
    expect(byId.json.totalResults).toBe(0);
  });

  test("B's token changes nothing of A: PUT, PATCH, DELETE are 404, and A's user is as it was", async () => {
    const t = get();
    const before = (await scim(t, a.bearer, "GET", `/Users/${a.user}`)).json;
    for (const [method, path, body] of [
      ["PUT", `/Users/${a.user}`, newUser("taken-over")],
      ["PATCH", `/Users/${a.user}`, patchOf({ op: "replace", value: { active: false } })],
      ["DELETE", `/Users/${a.user}`, undefined],
      ["PUT", `/Groups/${a.group}`, { schemas: [GROUP_SCHEMA], displayName: "x", members: [] }],
      ["PATCH", `/Groups/${a.group}`, patchOf({ op: "add", path: "members", value: [{ value: b.user }] })],
      ["DELETE", `/Groups/${a.group}`, undefined],
    ] as const) {
      const r = await scim(t, b.bearer, method, path, body);
      expect([method, path, r.status, r.json?.schemas]).toEqual([method, path, 404, [ERROR_SCHEMA]]);
    }
    expect((await scim(t, a.bearer, "GET", `/Users/${a.user}`)).json).toEqual(before);
  });

  test("a group member reference to another tenant's user is refused, and nothing is written", async () => {
    const t = get();
    const r = await scim(
      t,
      b.bearer,
      "PATCH",
      `/Groups/${b.group}`,
      patchOf({ op: "add", path: "members", value: [{ value: b.user }, { value: a.user }] }),
    );
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ schemas: [ERROR_SCHEMA], status: "400", scimType: "invalidValue" });
    expect((await scim(t, b.bearer, "GET", `/Groups/${b.group}`)).json.members).toEqual([]);
    const created = await scim(t, b.bearer, "POST", "/Groups", {
      schemas: [GROUP_SCHEMA],
      displayName: "Sneaky",
      members: [{ value: a.user }],
    });
    expect(created.status).toBe(400);
    expect(
      (await scim(t, b.bearer, "GET", `/Groups?filter=${encodeURIComponent('displayName eq "Sneaky"')}`)).json
        .totalResults,
    ).toBe(0);
  });

  test("a SCIM token reaches nothing of the wazo REST API", async () => {
    const t = get();
    for (const path of ["/0.1/users", `/0.1/users/${b.user}`, "/0.1/groups", "/0.1/scim/tokens"]) {
      const r = await t.request("GET", path, { headers: { Authorization: `Bearer ${b.bearer}` } });
      expect([path, r.status]).toEqual([path, 401]);
    }
    expect((await t.request("HEAD", `/0.1/token/${b.bearer}`)).status).toBe(404);
  });

  test("a Tessera token acts in its own tenant with auth.scim.* ACLs, and is refused without them", async () => {
    const t = get();
    const scoped = await tokenFor(t.app, { acl: ["auth.scim.users.read"], tenantUuid: a.tenant });
    const r = await scim(t, scoped.token, "GET", "/Users");
    expect(r.status).toBe(200);
    expect(r.json.Resources.map((u: { id: string }) => u.id)).toContain(a.user);
    expect(r.json.Resources.map((u: { id: string }) => u.id)).not.toContain(b.user);
    const write = await scim(t, scoped.token, "POST", "/Users", newUser("nope"));
    expect(write.status).toBe(403);
    expect(write.json).toMatchObject({ schemas: [ERROR_SCHEMA], status: "403" });
    // Wazo-Tenant does not move it: the tenant is the token's
    const moved = await t.request("GET", "/0.1/scim/v2/Users", {
      headers: { Authorization: `Bearer ${scoped.token}`, "Wazo-Tenant": b.tenant },
    });
    expect(moved.json.Resources.map((u: { id: string }) => u.id)).not.toContain(b.user);
    const none = await scim(t, "tscim_not-a-token", "GET", "/Users");
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toContain("Bearer");
    expect(none.json).toMatchObject({ schemas: [ERROR_SCHEMA], status: "401" });
  });

  test("an OAuth client-credentials token of the tenant's OpenID Connect client acts in its tenant", async () => {
    const t = get();
    const client = await t.request("POST", "/0.1/oidc/clients", {
      token: master,
      tenant: a.tenant,
      body: {
        name: "Provisioning daemon",
        client_type: "confidential",
        redirect_uris: [],
        grant_types: ["client_credentials"],
        acl: ["auth.scim.users.read"],
      },
    });
    expect(client.status).toBe(201);
    const issued = await t.request("POST", "/0.1/oidc/token", {
      headers: {
        Authorization: `Basic ${btoa(`${client.json.client_id}:${client.json.client_secret}`)}`,
        "Content-Type": "application/x-www-form-urlencoded",
      },
      rawBody: "grant_type=client_credentials",
    });
    expect(issued.status).toBe(200);
    const r = await scim(t, issued.json.access_token, "GET", "/Users");
    expect(r.status).toBe(200);
    const ids = r.json.Resources.map((u: { id: string }) => u.id);
    expect([ids.includes(a.user), ids.includes(b.user)]).toEqual([true, false]);
    expect((await scim(t, issued.json.access_token, "POST", "/Users", newUser("nope2"))).status).toBe(403);
  });

  test("the grant rule: a token without a group's policy entries cannot add members to it", async () => {
    const t = get();
    const policy = await t.request("POST", "/0.1/policies", {
      token: master,
      tenant: a.tenant,
      body: { name: `calls${crypto.randomUUID().slice(0, 6)}`, acl: ["calld.#"] },
    });
    await t.request("PUT", `/0.1/groups/${a.group}/policies/${policy.json.uuid}`, { token: master, tenant: a.tenant });
    const r = await scim(
      t,
      a.bearer,
      "PATCH",
      `/Groups/${a.group}`,
      patchOf({ op: "add", path: "members", value: [{ value: a.user }] }),
    );
    expect(r.status).toBe(403);
    expect(r.json.detail).toContain("calld.#");
    expect((await scim(t, a.bearer, "GET", `/Groups/${a.group}`)).json.members).toEqual([]);
    // a token created with calld.# (by an administrator who holds it) may
    const wider = await scimToken(t, master, a.tenant, ["auth.scim.#", "calld.#"]);
    const ok = await scim(
      t,
      wider,
      "PATCH",
      `/Groups/${a.group}`,
      patchOf({ op: "add", path: "members", value: [{ value: a.user }] }),
    );
    expect(ok.status).toBe(200);
    // and an administrator cannot give a token what it does not hold
    const admin = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: a.tenant });
    const refused = await t.request("POST", "/0.1/scim/tokens", {
      token: admin.token,
      body: { name: "x", acl: ["calld.#"] },
    });
    expect(refused.status).toBe(403);
    expect(refused.json.details.required_access).toBe("calld.#");
  });

  test("tokens: shown once, stored hashed, listed without secret, revoked at once, audited", async () => {
    const t = get();
    const created = await t.request("POST", "/0.1/scim/tokens", {
      token: master,
      tenant: b.tenant,
      body: { name: "Entra" },
    });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      name: "Entra",
      tenant_uuid: b.tenant,
      acl: ["auth.scim.#"],
      last_used_at: null,
    });
    const secret = created.json.token as string;
    const stored = await execRows<{ token_hash: string }>(
      t.app.db,
      sql`select token_hash from tessera_scim_token where uuid = ${created.json.uuid}`,
    );
    expect(stored[0]!.token_hash).not.toContain(secret);
    expect(stored[0]!.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect((await scim(t, secret, "GET", "/Users")).status).toBe(200);
    const list = await t.request("GET", "/0.1/scim/tokens", { token: master, tenant: b.tenant });
    const mine = list.json.items.find((i: { uuid: string }) => i.uuid === created.json.uuid);
    expect(mine.token).toBeUndefined();
    expect(mine.last_used_at).toBeString();
    expect(JSON.stringify(list.json)).not.toContain(secret);
    // another tenant's administrator neither lists nor revokes it
    const other = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: a.tenant });
    const seen = await t.request("GET", "/0.1/scim/tokens", { token: other.token });
    expect(seen.json.items.map((i: { uuid: string }) => i.uuid)).not.toContain(created.json.uuid);
    expect((await t.request("DELETE", `/0.1/scim/tokens/${created.json.uuid}`, { token: other.token })).status).toBe(
      204,
    );
    expect((await scim(t, secret, "GET", "/Users")).status).toBe(200);
    expect(
      (await t.request("DELETE", `/0.1/scim/tokens/${created.json.uuid}`, { token: master, tenant: b.tenant })).status,
    ).toBe(204);
    expect((await scim(t, secret, "GET", "/Users")).status).toBe(401);
    const audit = await execRows<{ action: string; changes: unknown }>(
      t.app.db,
      sql`select action, changes from tessera.audit where target_uuid = ${created.json.uuid} order by id`,
    );
    expect(audit.map((e) => e.action)).toEqual(["scim_token.create", "scim_token.delete"]);
    expect(JSON.stringify(audit)).not.toContain(secret);
  });

  test("a SCIM change is audited with the token as the actor's session, and evented", async () => {
    const t = get();
    const r = await scim(
      t,
      b.bearer,
      "PATCH",
      `/Users/${b.user}`,
      patchOf({ op: "replace", path: "name.givenName", value: "Renamed" }),
    );
    expect(r.status).toBe(200);
    const [tok] = await execRows<{ uuid: string }>(
      t.app.db,
      sql`select uuid from tessera_scim_token where tenant_uuid = ${b.tenant} order by created_at limit 1`,
    );
    const entries = await execRows<{ action: string; actor_session_uuid: string }>(
      t.app.db,
      sql`select action, actor_session_uuid from tessera.audit where target_uuid = ${b.user} order by id desc limit 1`,
    );
    expect(entries[0]).toEqual({ action: "user.update", actor_session_uuid: tok!.uuid });
    const events = await listRecordedEvents(t.app.db);
    expect(events.some((e) => e.name === "auth_user_updated" && e.payload.data.uuid === b.user)).toBe(true);
  });
});

describe.skipIf(!databaseKinds().includes("postgres"))("SCIM deactivation heard by another instance [postgres]", () => {
  let scratch: Awaited<ReturnType<typeof scratchDatabase>>;
  let one: TestApp;
  let two: TestApp;
  beforeAll(async () => {
    scratch = await scratchDatabase("tessera_scim_instances");
    const open = () => openDatabase({ url: scratch.url, poolSize: 4 });
    one = await createTestApp("postgres", { database: open });
    two = await createTestApp("postgres", { database: open });
  }, 60_000);
  afterAll(async () => {
    await one?.close();
    await two?.close();
    await scratch?.drop();
  }, 30_000);

  test("active: false on instance one: the user's token is refused on instance two at once", async () => {
    const tenant = await createTenantRow(one.app);
    two.app.tenantTree.invalidate();
    const bearer = await scimToken(one, await adminToken(one.app), tenant);
    const user = (await scim(one, bearer, "POST", "/Users", newUser(`u${crypto.randomUUID().slice(0, 8)}`))).json.id;
    const { token } = await tokenFor(one.app, { acl: ["confd.#"], userUuid: user, tenantUuid: tenant });
    expect((await two.request("HEAD", `/0.1/token/${token}`)).status).toBe(204);
    const r = await scim(
      one,
      bearer,
      "PATCH",
      `/Users/${user}`,
      patchOf({ op: "Replace", path: "active", value: "False" }),
    );
    expect(r.json.active).toBe(false);
    await until(() => two.app.tokenCache.get(token) === undefined);
    expect((await two.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
  }, 30_000);
});
