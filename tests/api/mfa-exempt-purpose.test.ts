// `purpose: internal` exempts a user from its tenant's MFA requirement, so giving it (at creation or
// by a change) takes the right to relax that requirement: a sub-tenant's administrator cannot undo,
// user by user, what a parent tenant decided for it.
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken, tenantFamily } from "../helpers/fixtures.ts";

const userBody = (purpose: string) => ({ username: `p-${crypto.randomUUID().slice(0, 8)}`, purpose });

describeEachDb("an exempt purpose under an inherited MFA requirement", (get) => {
  test("a sub-tenant's administrator can neither create internal users nor make a user internal; the parent's can", async () => {
    const t = get();
    const root = await adminToken(t.app);
    const f = await tenantFamily(t.app);
    const required = await t.request("PUT", `/0.1/tenants/${f.tenant}/mfa`, { token: root, body: { mfa: "required" } });
    expect(required.status).toBe(204);
    // the child's administrator: relaxing is refused, and so is each way around it
    const relax = await t.request("PUT", `/0.1/tenants/${f.child}/mfa`, {
      token: f.childAdmin,
      body: { mfa: "optional" },
    });
    expect(relax.status).toBe(403);
    const created = await t.request("POST", "/0.1/users", {
      token: f.childAdmin,
      tenant: f.child,
      body: userBody("internal"),
    });
    expect([created.status, created.json.error_id, created.json.details]).toEqual([
      403,
      "forbidden",
      { inherited_from: f.tenant },
    ]);
    const plain = await t.request("POST", "/0.1/users", {
      token: f.childAdmin,
      tenant: f.child,
      body: userBody("user"),
    });
    expect(plain.status).toBe(200);
    const uuid = plain.json.uuid;
    const changed = await t.request("PUT", `/0.1/users/${uuid}`, {
      token: f.childAdmin,
      tenant: f.child,
      body: { username: plain.json.username, purpose: "internal" },
    });
    expect(changed.status).toBe(403);
    expect((await t.request("GET", `/0.1/users/${uuid}`, { token: root })).json.purpose).toBe("user");
    // other purposes stay the sub-tenant administrator's to give
    const api = await t.request("POST", "/0.1/users", {
      token: f.childAdmin,
      tenant: f.child,
      body: userBody("external_api"),
    });
    expect(api.status).toBe(200);
    // the parent's administrator holds the right: its change passes
    const byParent = await t.request("PUT", `/0.1/users/${uuid}`, {
      token: f.admin,
      tenant: f.child,
      body: { username: plain.json.username, purpose: "internal" },
    });
    expect(byParent.status).toBe(204);
    // an already internal user's other fields stay editable below
    const renamed = await t.request("PUT", `/0.1/users/${uuid}`, {
      token: f.childAdmin,
      tenant: f.child,
      body: { username: plain.json.username, firstname: "Svc", purpose: "internal" },
    });
    expect(renamed.status).toBe(204);
  });

  test("without a requirement above, or with the tenant's own, its administrator gives any purpose", async () => {
    const t = get();
    const f = await tenantFamily(t.app);
    const free = await t.request("POST", "/0.1/users", {
      token: f.siblingAdmin,
      tenant: f.sibling,
      body: userBody("internal"),
    });
    expect(free.status).toBe(200);
    expect(
      (await t.request("PUT", `/0.1/tenants/${f.tenant}/mfa`, { token: f.admin, body: { mfa: "required" } })).status,
    ).toBe(204);
    const own = await t.request("POST", "/0.1/users", { token: f.admin, tenant: f.child, body: userBody("internal") });
    expect(own.status).toBe(200);
  });
});
