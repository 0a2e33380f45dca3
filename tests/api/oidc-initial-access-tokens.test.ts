// Initial access tokens (RFC 7591 §3): issued per tenant by its administrator, shown once and
// stored hashed, listed, revoked, audited, evented; a sibling tenant sees and changes none of them.
import { expect, test } from "bun:test";
import { auditEntries, oidcInitialAccessTokens } from "../../src/db/schema.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, tokenFor } from "../helpers/fixtures.ts";

const PATH = "/0.1/oidc/initial-access-tokens";

describeEachDb("OIDC initial access tokens", (get) => {
  test("create: 201 {uuid, token, expires_at}; single use and one day by default; the token is stored hashed and never listed", async () => {
    const t = get();
    const tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    const before = Date.now();
    const r = await t.request("POST", PATH, { token: admin, body: {} });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ tenant_uuid: tenant, max_uses: 1, uses: 0 });
    expect(r.json.grant_types).toEqual(["authorization_code", "refresh_token"]);
    expect(r.json.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const expires = Date.parse(r.json.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 86_400_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 86_400_000 + 1000);
    const rows = await t.app.db.select().from(oidcInitialAccessTokens);
    const row = rows.find((x) => x.uuid === r.json.uuid)!;
    expect(row.tokenHash).not.toBe(r.json.token);
    expect(row.tokenHash).toMatch(/^[0-9a-f]{64}$/);

    const custom = await t.request("POST", PATH, {
      token: admin,
      body: { max_uses: 5, expires_in: 600, grant_types: ["authorization_code"] },
    });
    expect(custom.status).toBe(201);
    expect(custom.json).toMatchObject({ max_uses: 5, grant_types: ["authorization_code"] });
    expect(Date.parse(custom.json.expires_at) - Date.now()).toBeLessThanOrEqual(600_000);

    const list = await t.request("GET", `${PATH}?order=created_at`, { token: admin });
    expect(list.status).toBe(200);
    expect(list.json.total).toBe(2);
    expect(list.json.items.map((i: { uuid: string }) => i.uuid)).toEqual([r.json.uuid, custom.json.uuid]);
    expect(JSON.stringify(list.json)).not.toContain(r.json.token);
    expect(list.json.items[0].token).toBeUndefined();

    // Audited without the token.
    const trail = JSON.stringify(await t.app.db.select().from(auditEntries));
    expect(trail).toContain("oidc_initial_access_token.create");
    expect(trail).not.toContain(r.json.token);
  });

  test("bad input: 400 with the field, nothing written; client_credentials is never registrable", async () => {
    const t = get();
    const tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    const cases: [unknown, string][] = [
      [{ max_uses: 0 }, "max_uses"],
      [{ max_uses: "2" }, "max_uses"],
      [{ expires_in: 10 }, "expires_in"],
      [{ expires_in: 1.5 }, "expires_in"],
      [{ grant_types: ["implicit"] }, "grant_types"],
      [{ grant_types: [] }, "grant_types"],
      [{ grant_types: ["client_credentials"] }, "grant_types"],
    ];
    for (const [body, field] of cases) {
      const r = await t.request("POST", PATH, { token: admin, body });
      expect(r.status).toBe(400);
      expect(r.json.error_id).toBe("invalid-data");
      expect(Object.keys(r.json.details)).toContain(field);
    }
    const client = await t.request("POST", PATH, { token: admin, body: { grant_types: ["client_credentials"] } });
    expect(client.json.details.grant_types.constraint_id).toBe("not_registrable");
    expect((await t.request("GET", PATH, { token: admin })).json.total).toBe(0);
  });

  test("revoke: 204, gone from the list, audited; absent → 204 again", async () => {
    const t = get();
    const tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    const r = await t.request("POST", PATH, { token: admin, body: { max_uses: 3 } });
    expect((await t.request("DELETE", `${PATH}/${r.json.uuid}`, { token: admin })).status).toBe(204);
    expect((await t.request("GET", PATH, { token: admin })).json.total).toBe(0);
    expect((await t.request("DELETE", `${PATH}/${r.json.uuid}`, { token: admin })).status).toBe(204);
    const trail = JSON.stringify(await t.app.db.select().from(auditEntries));
    expect(trail).toContain("oidc_initial_access_token.delete");
  });

  test("isolation: a sibling tenant neither lists nor revokes; the parent sees a child's with recurse or Wazo-Tenant", async () => {
    const t = get();
    const parent = await createTenantRow(t.app);
    const child = await createTenantRow(t.app, { parentUuid: parent });
    const sibling = await createTenantRow(t.app);
    const childAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: child })).token;
    const parentAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: parent })).token;
    const siblingAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: sibling })).token;
    const r = await t.request("POST", PATH, { token: childAdmin, body: {} });
    expect(r.json.tenant_uuid).toBe(child);

    expect((await t.request("GET", PATH, { token: siblingAdmin })).json.total).toBe(0);
    expect((await t.request("GET", PATH, { token: siblingAdmin, tenant: child })).status).toBe(401);
    expect((await t.request("DELETE", `${PATH}/${r.json.uuid}`, { token: siblingAdmin })).status).toBe(204);
    expect((await t.request("GET", PATH, { token: childAdmin })).json.total).toBe(1); // still there

    expect((await t.request("GET", PATH, { token: parentAdmin })).json.total).toBe(0);
    expect((await t.request("GET", `${PATH}?recurse=true`, { token: parentAdmin })).json.total).toBe(1);
    expect((await t.request("GET", PATH, { token: parentAdmin, tenant: child })).json.total).toBe(1);
    // Issued by the parent for its child: the child's tenant is the one its clients register in.
    const forChild = await t.request("POST", PATH, { token: parentAdmin, tenant: child, body: {} });
    expect(forChild.json.tenant_uuid).toBe(child);
  });

  test("ACLs: auth.oidc.initial_access_tokens.* per action", async () => {
    const t = get();
    const tenant = await createTenantRow(t.app);
    const none = (await tokenFor(t.app, { acl: ["auth.oidc.clients.#"], tenantUuid: tenant })).token;
    expect((await t.request("POST", PATH, { token: none, body: {} })).status).toBe(403);
    expect((await t.request("GET", PATH, { token: none })).status).toBe(403);
    const create = (await tokenFor(t.app, { acl: ["auth.oidc.initial_access_tokens.create"], tenantUuid: tenant }))
      .token;
    const r = await t.request("POST", PATH, { token: create, body: {} });
    expect(r.status).toBe(201);
    expect((await t.request("DELETE", `${PATH}/${r.json.uuid}`, { token: create })).status).toBe(403);
    const del = (
      await tokenFor(t.app, {
        acl: [`auth.oidc.initial_access_tokens.${r.json.uuid}.delete`],
        tenantUuid: tenant,
      })
    ).token;
    expect((await t.request("DELETE", `${PATH}/${r.json.uuid}`, { token: del })).status).toBe(204);
    expect((await t.request("POST", PATH)).status).toBe(401);
  });
});
