// Self-service MFA out of the box (`mfa.self_service` adds its entry to every user's login token, in
// new and old tenants, without touching any policy or group), and the stock policies `tessera_user`,
// `tessera_tenant_admin`, `tessera_auditor` ready to attach — read-only, and attached only by a
// caller who could grant their entries.
import { expect, test } from "bun:test";
import { createTestApp, describeEachDb, type TestApp } from "../helpers/app.ts";
import { adminToken, createTenantRow, tokenFor } from "../helpers/fixtures.ts";

/** PostgreSQL serves MFA only with a configured key (PGlite would generate one). */
const WITH_MFA_KEY = {
  config: { mfa: { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 7).toString("base64") }] } },
};

const basic = (login: string, password: string) => ({
  Authorization: `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`,
});

/** A user made through the API in `tenant` (so in its all-users group), and its login token. */
async function apiUser(t: TestApp, admin: string, tenant: string) {
  const username = `u-${crypto.randomUUID().slice(0, 8)}`;
  const created = await t.request("POST", "/0.1/users", {
    token: admin,
    tenant,
    body: { username, password: "pw-secret" },
  });
  expect(created.status).toBe(200);
  const login = async () =>
    (await t.request("POST", "/0.1/token", { body: {}, headers: basic(username, "pw-secret") })).json.data
      .token as string;
  return { uuid: created.json.uuid as string, username, login };
}

describeEachDb(
  "stock policies",
  (get) => {
    test("self-service MFA out of the box: a user of a new tenant enrols with the default configuration", async () => {
      const t = get();
      const root = await adminToken(t.app);
      const tenant = (await t.request("POST", "/0.1/tenants", { token: root, body: { name: "Fresh" } })).json.uuid;
      const user = await apiUser(t, root, tenant);
      const token = await user.login();
      expect((await t.request("POST", "/0.1/users/me/mfa/totp", { token })).status).toBe(201);
      expect((await t.request("GET", "/0.1/users/me/mfa", { token })).status).toBe(200);
      // its own factors, nothing more: no policy was attached for it
      expect((await t.request("GET", "/0.1/users", { token })).status).toBe(403);
      const allUsers = (await t.request("GET", `/0.1/users/${user.uuid}/groups`, { token: root })).json.items[0];
      const groupPolicies = await t.request("GET", `/0.1/groups/${allUsers.uuid}/policies`, { token: root });
      expect(groupPolicies.json.total).toBe(0);
    });

    test("a tenant made by an older version (its all-users group bare) gets self-service MFA too", async () => {
      const t = get();
      const root = await adminToken(t.app);
      const old = await createTenantRow(t.app); // its all-users group, without policies, as an older version left it
      const user = await apiUser(t, root, old);
      expect((await t.request("POST", "/0.1/users/me/mfa/totp", { token: await user.login() })).status).toBe(201);
    });

    test("the stock policies are read-only and visible from every tenant", async () => {
      const t = get();
      const root = await adminToken(t.app);
      const tenant = await createTenantRow(t.app);
      const tenantAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const seen = (await t.request("GET", "/0.1/policies?read_only=true", { token: tenantAdmin })).json.items;
      const bySlug = Object.fromEntries(seen.map((p: { slug: string }) => [p.slug, p]));
      expect(bySlug.tessera_tenant_admin).toMatchObject({ read_only: true, acl: ["auth.#"] });
      expect(bySlug.tessera_auditor).toMatchObject({ read_only: true, acl: ["auth.#.read"] });
      expect(bySlug.tessera_user.acl).toContain("auth.users.me.mfa.#");
      const edit = await t.request("PUT", `/0.1/policies/${bySlug.tessera_tenant_admin.uuid}`, {
        token: root,
        body: { name: "tessera_tenant_admin", acl: ["#"] },
      });
      expect(edit.status).toBe(403);
    });

    test("an administrator for a customer tenant: the tenant-admin policy, within its tenant only; the grant rule holds", async () => {
      const t = get();
      const root = await adminToken(t.app);
      const customer = (await t.request("POST", "/0.1/tenants", { token: root, body: { name: "Customer" } })).json.uuid;
      const other = (await t.request("POST", "/0.1/tenants", { token: root, body: { name: "Other" } })).json.uuid;
      const stranger = await apiUser(t, root, other);
      const boss = await apiUser(t, root, customer);
      // a caller of the tenant that could not grant auth.# cannot attach it
      const small = (await tokenFor(t.app, { acl: ["auth.users.#"], tenantUuid: customer })).token;
      const refused = await t.request("PUT", `/0.1/users/${boss.uuid}/policies/tessera_tenant_admin`, {
        token: small,
        tenant: customer,
      });
      expect([refused.status, refused.json.details.required_access]).toEqual([403, "auth.#"]);
      const attached = await t.request("PUT", `/0.1/users/${boss.uuid}/policies/tessera_tenant_admin`, {
        token: root,
        tenant: customer,
      });
      expect(attached.status).toBe(204);
      const token = await boss.login();
      const hired = await t.request("POST", "/0.1/users", { token, body: { username: `staff-${boss.username}` } });
      expect([hired.status, hired.json.tenant_uuid]).toEqual([200, customer]);
      expect((await t.request("GET", `/0.1/users/${stranger.uuid}`, { token })).status).toBe(404);
      expect((await t.request("GET", "/0.1/users", { token, tenant: other })).status).toBe(401);
      // an auditor reads, never writes
      const auditor = await apiUser(t, root, customer);
      await t.request("PUT", `/0.1/users/${auditor.uuid}/policies/tessera_auditor`, { token: root, tenant: customer });
      const reader = await auditor.login();
      const listed = (await t.request("GET", "/0.1/users", { token: reader })).json.items.map(
        (u: { uuid: string }) => u.uuid,
      );
      expect(listed).toContain(boss.uuid);
      expect(listed).not.toContain(stranger.uuid);
      expect((await t.request("POST", "/0.1/users", { token: reader, body: { username: "nope" } })).status).toBe(403);
    });
  },
  WITH_MFA_KEY,
);

test("mfa.self_service off: the factors are the administrators' to manage", async () => {
  const t = await createTestApp("pglite", { config: { mfa: { self_service: false } } });
  try {
    const root = await adminToken(t.app);
    const user = await apiUser(t, root, t.app.topTenantUuid);
    const token = await user.login();
    expect((await t.request("POST", "/0.1/users/me/mfa/totp", { token })).status).toBe(403);
  } finally {
    await t.close();
  }
}, 60_000);

test("tessera_user, attached to every user by configuration, gives the own account", async () => {
  const t = await createTestApp("pglite", {
    config: { ...WITH_MFA_KEY.config, all_users_policies: { tessera_user: true } },
  });
  try {
    const root = await adminToken(t.app);
    const tenant = (await t.request("POST", "/0.1/tenants", { token: root, body: { name: "Configured" } })).json.uuid;
    const user = await apiUser(t, root, tenant);
    const token = await user.login();
    expect((await t.request("GET", `/0.1/users/${user.uuid}`, { token })).status).toBe(200);
    const own = { username: user.username, purpose: "internal" };
    expect((await t.request("PUT", `/0.1/users/${user.uuid}`, { token, body: own })).status).toBe(403);
  } finally {
    await t.close();
  }
}, 60_000);
