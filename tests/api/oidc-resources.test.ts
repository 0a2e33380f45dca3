// Resource servers (RFC 8707 resource indicators, RFC 9068 token format): the registration
// contract, validation, tenant isolation, the audit trail and events.
import { beforeAll, expect, test } from "bun:test";
import { listRecordedEvents } from "../../src/services/events.ts";
import { describeEachDb } from "../helpers/app.ts";
import { tenantFamily, tokenFor } from "../helpers/fixtures.ts";

const API = {
  identifier: "https://calld.example.com/api",
  acl: ["calld.#", "confd.users.*.read"],
  token_format: "jwt",
  access_token_lifetime: 300,
};

describeEachDb("OpenID Connect resource servers", (get) => {
  let family: Awaited<ReturnType<typeof tenantFamily>>;
  beforeAll(async () => {
    family = await tenantFamily(get().app);
  });

  test("create, read, list, update, delete: audited and evented", async () => {
    const t = get();
    const r = await t.request("POST", "/0.1/oidc/resources", { token: family.admin, body: API });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ ...API, tenant_uuid: family.tenant });
    expect(r.json.uuid).toMatch(/^[0-9a-f-]{36}$/);
    const uuid = r.json.uuid as string;
    const read = await t.request("GET", `/0.1/oidc/resources/${uuid}`, { token: family.admin });
    expect(read.status).toBe(200);
    expect(read.json).toEqual(r.json);
    const list = await t.request("GET", "/0.1/oidc/resources?identifier=https://calld.example.com/api", {
      token: family.admin,
    });
    expect(list.status).toBe(200);
    expect(list.json).toMatchObject({ filtered: 1, total: 1 });
    expect(list.json.items[0].uuid).toBe(uuid);
    // The same identifier twice in a tenant: 409.
    const again = await t.request("POST", "/0.1/oidc/resources", { token: family.admin, body: API });
    expect(again.status).toBe(409);
    expect(again.json.details.identifier.constraint_id).toBe("unique");
    const put = await t.request("PUT", `/0.1/oidc/resources/${uuid}`, {
      token: family.admin,
      body: { ...API, token_format: "opaque", access_token_lifetime: null },
    });
    expect(put.status).toBe(204);
    const after = await t.request("GET", `/0.1/oidc/resources/${uuid}`, { token: family.admin });
    expect(after.json).toMatchObject({ token_format: "opaque", access_token_lifetime: null });
    const events = (await listRecordedEvents(t.app.db)).filter((e) => e.payload.data?.uuid === uuid);
    expect(events.map((e) => e.name)).toEqual(["auth_oidc_resource_created", "auth_oidc_resource_updated"]);
    expect(events[0]!.routingKey).toBe(`auth.oidc.resources.${uuid}.created`);
    expect(events[0]!.headers.tenant_uuid).toBe(family.tenant);
    const audit = await t.request("GET", `/0.1/audit?target_uuid=${uuid}&limit=10`, { token: family.admin });
    expect(audit.status).toBe(200);
    expect(audit.json.items.map((e: { action: string }) => e.action).sort()).toEqual([
      "oidc_resource.create",
      "oidc_resource.update",
    ]);
    expect((await t.request("DELETE", `/0.1/oidc/resources/${uuid}`, { token: family.admin })).status).toBe(204);
    expect((await t.request("GET", `/0.1/oidc/resources/${uuid}`, { token: family.admin })).status).toBe(404);
    // Absent: the desired state.
    expect((await t.request("DELETE", `/0.1/oidc/resources/${uuid}`, { token: family.admin })).status).toBe(204);
  });

  test("validation: an absolute URI without fragment, a known format, a bounded lifetime", async () => {
    const t = get();
    const bad = async (body: Record<string, unknown>) => {
      const r = await t.request("POST", "/0.1/oidc/resources", { token: family.admin, body: { ...API, ...body } });
      expect(r.status).toBe(400);
      expect(r.json.error_id).toBe("invalid-data");
      return r.json.details;
    };
    expect(Object.keys(await bad({ identifier: "/relative" }))).toEqual(["identifier"]);
    expect(Object.keys(await bad({ identifier: "https://api.example.com/#frag" }))).toEqual(["identifier"]);
    expect(Object.keys(await bad({ token_format: "saml" }))).toEqual(["token_format"]);
    expect(Object.keys(await bad({ access_token_lifetime: 0 }))).toEqual(["access_token_lifetime"]);
    expect(Object.keys(await bad({ acl: "calld.#" }))).toEqual(["acl"]);
  });

  test("tenant isolation: a sibling's administrator neither sees nor changes a resource; the same identifier is free in its tenant", async () => {
    const t = get();
    const mine = await t.request("POST", "/0.1/oidc/resources", {
      token: family.admin,
      body: { ...API, identifier: "https://isolated.example.com" },
    });
    expect(mine.status).toBe(201);
    const uuid = mine.json.uuid;
    const sibling = family.siblingAdmin;
    expect((await t.request("GET", `/0.1/oidc/resources/${uuid}`, { token: sibling })).status).toBe(404);
    expect((await t.request("PUT", `/0.1/oidc/resources/${uuid}`, { token: sibling, body: API })).status).toBe(404);
    expect((await t.request("DELETE", `/0.1/oidc/resources/${uuid}`, { token: sibling })).status).toBe(204);
    expect((await t.request("GET", `/0.1/oidc/resources/${uuid}`, { token: family.admin })).status).toBe(200);
    const list = await t.request("GET", "/0.1/oidc/resources", { token: sibling });
    expect(list.json.items.map((r: { uuid: string }) => r.uuid)).not.toContain(uuid);
    const theirs = await t.request("POST", "/0.1/oidc/resources", {
      token: sibling,
      body: { ...API, identifier: "https://isolated.example.com" },
    });
    expect(theirs.status).toBe(201);
    expect(theirs.json.tenant_uuid).toBe(family.sibling);
    // The parent's administrator sees its sub-tenant's with recurse.
    const child = await t.request("POST", "/0.1/oidc/resources", {
      token: family.childAdmin,
      body: { ...API, identifier: "https://child.example.com" },
    });
    const recursed = await t.request("GET", "/0.1/oidc/resources?recurse=true", { token: family.admin });
    expect(recursed.json.items.map((r: { uuid: string }) => r.uuid)).toContain(child.json.uuid);
  });

  test("ACLs: auth.oidc.resources.* is required, per action and per resource", async () => {
    const t = get();
    const created = await t.request("POST", "/0.1/oidc/resources", {
      token: family.admin,
      body: { ...API, identifier: "https://acl.example.com" },
    });
    const uuid = created.json.uuid;
    const reader = (await tokenFor(t.app, { acl: [`auth.oidc.resources.${uuid}.read`], tenantUuid: family.tenant }))
      .token;
    expect((await t.request("GET", `/0.1/oidc/resources/${uuid}`, { token: reader })).status).toBe(200);
    expect((await t.request("PUT", `/0.1/oidc/resources/${uuid}`, { token: reader, body: API })).status).toBe(403);
    expect((await t.request("POST", "/0.1/oidc/resources", { token: reader, body: API })).status).toBe(403);
    expect((await t.request("GET", "/0.1/oidc/resources", { token: reader })).status).toBe(403);
  });
});
