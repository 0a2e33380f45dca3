import { expect, test } from "bun:test";
import { listRecordedEvents } from "../../src/services/events.ts";
import { describeEachDb } from "../helpers/app.ts";
import { tokenFor } from "../helpers/fixtures.ts";

describeEachDb("tenants", (get) => {
  const master = async () => (await tokenFor(get().app, { acl: ["auth.#"] })).token;

  test("create, read, list, replace, delete", async () => {
    const t = get();
    const token = await master();
    const body = {
      name: "ACME Corp!",
      domain_names: ["b.example.com", "A.example.com", "b.example.com"],
      address: { city: "Quebec", zip_code: "G1A" },
      phone: "555",
    };
    const r = await t.request("POST", "/0.1/tenants", { token, body });
    expect(r.status).toBe(200);
    const tenant = r.json;
    expect(tenant).toMatchObject({
      parent_uuid: t.app.topTenantUuid,
      name: "ACME Corp!",
      slug: "ACMECorp",
      phone: "555",
      contact: null,
      default_authentication_method: "native",
      domain_names: ["a.example.com", "b.example.com"],
    });
    expect(tenant.address).toEqual({
      line_1: null,
      line_2: null,
      city: "Quebec",
      state: null,
      country: null,
      zip_code: "G1A",
    });
    expect((await t.request("GET", `/0.1/tenants/${tenant.uuid}`, { token })).json).toEqual(tenant);
    const list = await t.request("GET", "/0.1/tenants?search=b.example", { token });
    expect(list.json.items.map((i: { uuid: string }) => i.uuid)).toEqual([tenant.uuid]);
    expect(list.json.total).toBeGreaterThan(list.json.filtered);
    expect((await t.request("GET", `/0.1/tenants?domain_name=a.example.com`, { token })).json.filtered).toBe(1);
    expect(
      (await t.request("GET", `/0.1/tenants?uuids=${tenant.uuid}&uuids=${t.app.topTenantUuid}`, { token })).json
        .filtered,
    ).toBe(2);
    const put = await t.request("PUT", `/0.1/tenants/${tenant.uuid}`, {
      token,
      body: { name: "ACME", domain_names: ["b.example.com"] },
    });
    expect([put.status, put.text]).toEqual([204, ""]);
    const after = (await t.request("GET", `/0.1/tenants/${tenant.uuid}`, { token })).json;
    expect(after).toMatchObject({ name: "ACME", slug: "ACMECorp", phone: null, domain_names: ["b.example.com"] });
    expect(after.address.city).toBeNull();
    expect((await t.request("DELETE", `/0.1/tenants/${tenant.uuid}`, { token })).status).toBe(204);
    expect((await t.request("GET", `/0.1/tenants/${tenant.uuid}`, { token })).status).toBe(404);
    expect((await t.request("DELETE", `/0.1/tenants/${tenant.uuid}`, { token })).status).toBe(204);
    const names = (await listRecordedEvents(t.app.db))
      .filter((e) => e.routingKey.includes(tenant.uuid))
      .map((e) => e.name);
    expect(names).toEqual(["auth_tenant_added", "auth_tenant_updated", "auth_tenant_deleted"]);
    const added = (await listRecordedEvents(t.app.db)).find(
      (e) => e.name === "auth_tenant_added" && e.routingKey.includes(tenant.uuid),
    )!;
    expect(added.headers["user_uuid:*"]).toBe(true);
    expect(added.payload.data).toEqual({
      uuid: tenant.uuid,
      name: "ACME Corp!",
      slug: "ACMECorp",
      domain_names: ["a.example.com", "b.example.com"],
    });
  });

  test("a new tenant gets its all-users group", async () => {
    const t = get();
    const token = await master();
    const tenant = (await t.request("POST", "/0.1/tenants", { token, body: { name: "g" } })).json;
    const rows = await t.app.db.query.groups.findMany({ where: (g, { eq }) => eq(g.tenantUuid, tenant.uuid) });
    expect(rows.map((g) => [g.name, g.systemManaged])).toEqual([[`wazo-all-users-tenant-${tenant.uuid}`, true]]);
  });

  test("bad input answers 400 per field and writes nothing", async () => {
    const t = get();
    const token = await master();
    const before = (await t.request("GET", "/0.1/tenants", { token })).json.total;
    const cases: Array<[unknown, (d: Record<string, any>) => unknown, string]> = [
      [{ name: "" }, (d) => d.name, "length"],
      [{ slug: "with-dash" }, (d) => d.slug, "regex"],
      [{ slug: "elevenchars" }, (d) => d.slug, "length"],
      [{ domain_names: ["nodot"] }, (d) => d.domain_names["0"], "regex"],
      [{ domain_names: "a.com" }, (d) => d.domain_names, "type"],
      [{ address: { city: "" } }, (d) => d.address.city, "length"],
      [{ phone: "1".repeat(33) }, (d) => d.phone, "length"],
      [{ default_authentication_method: "kerberos" }, (d) => d.default_authentication_method, "enum"],
      [{ default_authentication_method: null }, (d) => d.default_authentication_method, "not_null"],
      [{ uuid: "nope" }, (d) => d.uuid, "uuid"],
    ];
    for (const [body, pick, constraint] of cases) {
      const r = await t.request("POST", "/0.1/tenants", { token, body });
      expect(r.status).toBe(400);
      expect(r.json).toMatchObject({ error_id: "invalid-data", message: "Invalid request", resource: "tenants" });
      expect((pick(r.json.details) as { constraint_id: string }).constraint_id).toBe(constraint);
    }
    expect((await t.request("GET", "/0.1/tenants", { token })).json.total).toBe(before);
  });

  test("conflicts: slug, domain name, uuid; uuid equal to parent is 403", async () => {
    const t = get();
    const token = await master();
    const a = (
      await t.request("POST", "/0.1/tenants", { token, body: { slug: "taken1", domain_names: ["x.example.org"] } })
    ).json;
    let r = await t.request("POST", "/0.1/tenants", { token, body: { slug: "taken1" } });
    expect([r.status, r.json.error_id, r.json.details.slug.constraint_id]).toEqual([409, "conflict", "unique"]);
    r = await t.request("POST", "/0.1/tenants", { token, body: { domain_names: ["X.example.org"] } });
    expect([r.status, r.json.details.domain_names.constraint_id]).toEqual([409, "unique"]);
    r = await t.request("POST", "/0.1/tenants", { token, body: { uuid: a.uuid } });
    expect([r.status, r.json.details.uuid.constraint_id]).toEqual([409, "unique"]);
    r = await t.request("POST", "/0.1/tenants", { token, body: { uuid: t.app.topTenantUuid } });
    expect(r.status).toBe(403);
  });

  test("isolation: siblings and children see nothing; Wazo-Tenant lets a parent act in a child", async () => {
    const t = get();
    const token = await master();
    const parent = (await t.request("POST", "/0.1/tenants", { token, body: { name: "parent" } })).json;
    const child = (await t.request("POST", "/0.1/tenants", { token, tenant: parent.uuid, body: { name: "child" } }))
      .json;
    expect(child.parent_uuid).toBe(parent.uuid);
    const sibling = (await t.request("POST", "/0.1/tenants", { token, body: { name: "sibling" } })).json;
    const parentAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: parent.uuid })).token;
    const childAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: child.uuid })).token;
    const siblingAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: sibling.uuid })).token;
    const list = (await t.request("GET", "/0.1/tenants", { token: parentAdmin })).json;
    expect(list.items.map((i: { name: string }) => i.name).sort()).toEqual(["child", "parent"]);
    for (const [who, target] of [
      [siblingAdmin, parent.uuid],
      [childAdmin, parent.uuid],
      [siblingAdmin, child.uuid],
    ] as const) {
      expect((await t.request("GET", `/0.1/tenants/${target}`, { token: who })).status).toBe(404);
      expect((await t.request("PUT", `/0.1/tenants/${target}`, { token: who, body: { name: "hacked" } })).status).toBe(
        404,
      );
      expect((await t.request("GET", `/0.1/tenants/${target}/domains`, { token: who })).status).toBe(404);
      expect((await t.request("DELETE", `/0.1/tenants/${target}`, { token: who })).status).toBe(204);
    }
    expect((await t.request("GET", `/0.1/tenants/${parent.uuid}`, { token })).json.name).toBe("parent");
    expect((await t.request("GET", "/0.1/tenants", { token: childAdmin, tenant: parent.uuid })).status).toBe(401);
    expect((await t.request("GET", `/0.1/tenants/${child.uuid}`, { token: parentAdmin })).status).toBe(200);
    // own tenant cannot be deleted; a parent with children cannot either
    let r = await t.request("DELETE", `/0.1/tenants/${parent.uuid}`, { token: parentAdmin });
    expect([r.status, r.json.error_id]).toEqual([403, "deleting-own-tenant-forbidden"]);
    r = await t.request("DELETE", `/0.1/tenants/${parent.uuid}`, { token });
    expect([r.status, r.json.error_id]).toEqual([409, "conflict"]);
  });

  test("re-parenting: no cycles, both ends visible", async () => {
    const t = get();
    const token = await master();
    const a = (await t.request("POST", "/0.1/tenants", { token, body: { name: "a" } })).json;
    const b = (await t.request("POST", "/0.1/tenants", { token, tenant: a.uuid, body: { name: "b" } })).json;
    const c = (await t.request("POST", "/0.1/tenants", { token, body: { name: "c" } })).json;
    let r = await t.request("PUT", `/0.1/tenants/${a.uuid}/parent/${b.uuid}`, { token });
    expect([r.status, r.json.error_id]).toEqual([409, "conflict"]);
    expect((await t.request("PUT", `/0.1/tenants/${b.uuid}/parent/${c.uuid}`, { token })).status).toBe(204);
    expect((await t.request("GET", `/0.1/tenants/${b.uuid}`, { token })).json.parent_uuid).toBe(c.uuid);
    const aAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: a.uuid })).token;
    r = await t.request("PUT", `/0.1/tenants/${b.uuid}/parent/${a.uuid}`, { token: aAdmin });
    expect([r.status, r.json.resource]).toEqual([404, "tenants"]);
  });
});
