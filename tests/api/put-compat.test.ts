// `compatibility.put_responses: wazo` (issue 17): the PUTs that wazo-auth answers with 200 and the
// resource answer that way, so wazo-auth-client's `edit()`-style calls (status check, then JSON
// decode of the body) keep working; by default every PUT stays 204 with no body (D3 of docs/wazo-auth-differences.md).
import { describe, expect, test } from "bun:test";
import { parse } from "yaml";
import { describeEachDb, type TestApp, type TestResponse } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { allSpecs, routeName } from "../helpers/route-table.ts";
import { createTestApp } from "../helpers/app.ts";

/** The PUTs wazo-auth's API lists with a 200 answer (LDAP config joins with its route). */
const WAZO_200_PUTS = [
  "PUT /users/{user_uuid}",
  "PUT /users/{user_uuid}/emails",
  "PUT /admin/users/{user_uuid}/emails",
  "PUT /users/{user_uuid}/external/mobile",
  "PUT /tenants/{tenant_uuid}",
  "PUT /groups/{group_uuid}",
  "PUT /policies/{policy}",
  "PUT /backends/saml",
];

/** What wazo-auth-client does with a PUT: raise on an error status, then decode the body. */
function clientPut(r: TestResponse): unknown {
  if (r.status !== 200 && r.status >= 400) throw new Error(`HTTP ${r.status}`);
  return JSON.parse(r.text);
}

const uniq = () => crypto.randomUUID().slice(0, 8);

/** Each legacy PUT with a realistic body, and what its answer must hold (catalogue shapes). */
async function legacyCalls(t: TestApp) {
  const tenant = await createTenantRow(t.app);
  const admin = (await tokenFor(t.app, { acl: ["#"], tenantUuid: tenant })).token;
  const user = await createUserRow(t.app, { tenantUuid: tenant });
  const group = (await t.request("POST", "/0.1/groups", { token: admin, body: { name: `g${uniq()}` } })).json;
  const policy = (
    await t.request("POST", "/0.1/policies", { token: admin, body: { name: `p${uniq()}`, acl: ["a.b"] } })
  ).json;
  await t.request("POST", `/0.1/users/${user}/external/mobile`, { token: admin, body: { token: "fcm-1" } });
  const name = `n${uniq()}`;
  return [
    {
      path: `/0.1/users/${user}`,
      body: { username: name, firstname: "Ada", enabled: true },
      check: (j: any) =>
        expect(j).toMatchObject({
          uuid: user,
          tenant_uuid: tenant,
          username: name,
          firstname: "Ada",
          lastname: null,
          enabled: true,
          purpose: "user",
          emails: [],
        }),
    },
    {
      path: `/0.1/users/${user}/emails`,
      body: { emails: [{ address: `${name}@x.org`, main: true }] },
      check: (j: any) =>
        expect(j).toEqual([{ uuid: expect.any(String), address: `${name}@x.org`, main: true, confirmed: false }]),
    },
    {
      path: `/0.1/admin/users/${user}/emails`,
      body: { emails: [{ address: `${name}@x.org`, main: true, confirmed: true }] },
      check: (j: any) =>
        expect(j).toEqual([{ uuid: expect.any(String), address: `${name}@x.org`, main: true, confirmed: true }]),
    },
    {
      path: `/0.1/users/${user}/external/mobile`,
      body: { token: "fcm-2" },
      check: (j: any) => expect(j).toMatchObject({ token: "fcm-2", apns_token: null }),
    },
    {
      path: `/0.1/tenants/${tenant}`,
      body: { name: `T ${name}`, domain_names: [`${name}.example.com`] },
      check: (j: any) =>
        expect(j).toMatchObject({ uuid: tenant, name: `T ${name}`, domain_names: [`${name}.example.com`] }),
    },
    {
      path: `/0.1/groups/${group.uuid}`,
      body: { name: `G ${name}` },
      check: (j: any) =>
        expect(j).toMatchObject({
          uuid: group.uuid,
          name: `G ${name}`,
          slug: group.slug,
          tenant_uuid: tenant,
          read_only: false,
        }),
    },
    {
      path: `/0.1/policies/${policy.uuid}`,
      body: { name: `P ${name}`, acl: ["a.b", "!a.c"] },
      check: (j: any) =>
        expect(j).toMatchObject({
          uuid: policy.uuid,
          name: `P ${name}`,
          slug: policy.slug,
          tenant_uuid: tenant,
          acl: ["!a.c", "a.b"],
          read_only: false,
        }),
    },
    // wazo-auth answers these 204 as well: they stay 204 under the switch
    { path: `/0.1/groups/${group.uuid}/users/${user}`, body: undefined, check: null },
    { path: `/0.1/policies/${policy.uuid}/acl/a.d`, body: undefined, check: null },
  ].map((call) => ({ ...call, admin }));
}

describeEachDb(
  "PUT answers under compatibility.put_responses: wazo",
  (get) => {
    test("the PUTs wazo-auth answers with 200 do so, with the resource; the others stay 204", async () => {
      const t = get();
      for (const call of await legacyCalls(t)) {
        const r = await t.request("PUT", call.path, { token: call.admin, body: call.body });
        if (call.check === null) {
          expect([call.path, r.status, r.text]).toEqual([call.path, 204, ""]);
          continue;
        }
        expect([call.path, r.status, r.headers.get("Content-Type")]).toEqual([call.path, 200, "application/json"]);
        call.check(clientPut(r)); // the client's exact sequence succeeds
      }
    });

    test("errors are unchanged: a refused PUT writes nothing and answers the one error body", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const outsider = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const victim = await createUserRow(t.app);
      const r = await t.request("PUT", `/0.1/users/${victim}`, { token: outsider, body: { username: "x" } });
      expect([r.status, r.json.error_id]).toEqual([404, "not-found"]);
      expect(() => clientPut(r)).toThrow("HTTP 404");
    });

    test("the OpenAPI document describes the 200 answers", async () => {
      const doc = parse((await get().request("GET", "/0.1/api/api.yml")).text);
      expect(Object.keys(doc.paths["/users/{user_uuid}"].put.responses)).toContain("200");
      expect(Object.keys(doc.paths["/users/{user_uuid}"].put.responses)).not.toContain("204");
      expect(Object.keys(doc.paths["/groups/{group_uuid}/users/{user_uuid}"].put.responses)).toContain("204");
    });
  },
  { config: { compatibility: { put_responses: "wazo" } } },
);

describeEachDb("PUT answers by default (D3)", (get) => {
  test("every legacy PUT is 204 with no body, so the client's JSON decode fails", async () => {
    const t = get();
    for (const call of await legacyCalls(t)) {
      const r = await t.request("PUT", call.path, { token: call.admin, body: call.body });
      expect([call.path, r.status, r.text]).toEqual([call.path, 204, ""]);
      if (call.check) expect(() => clientPut(r)).toThrow();
    }
    const doc = parse((await t.request("GET", "/0.1/api/api.yml")).text);
    expect(Object.keys(doc.paths["/users/{user_uuid}"].put.responses)).toContain("204");
  });
});

describe("route table", () => {
  test("exactly the PUTs wazo-auth answers with 200 declare a wazo answer", async () => {
    const t = await createTestApp("pglite");
    try {
      const declared = allSpecs(t.app)
        .filter((s) => s.method === "put" && s.wazoPutAnswer)
        .map(routeName);
      expect(declared.sort()).toEqual(
        [...WAZO_200_PUTS, ...(declared.includes("PUT /backends/ldap") ? ["PUT /backends/ldap"] : [])].sort(),
      );
    } finally {
      await t.close();
    }
  });
});
