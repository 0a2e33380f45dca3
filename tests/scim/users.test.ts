// SCIM Users beyond the clients' sequences: meta.version and If-Match (RFC 7644 §3.14), what
// deactivation ends (sessions, refresh tokens, events), attributes kept as sent, the discovery
// endpoints, and bad input answered with the SCIM error body (never a 500, never a partial write).
import { expect, test } from "bun:test";
import { listRecordedEvents } from "../../src/services/events.ts";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken, createTenantRow, tokenFor } from "../helpers/fixtures.ts";
import {
  ENTERPRISE,
  ERROR_SCHEMA,
  GROUP_SCHEMA,
  patchOf,
  SCIM,
  scim,
  scimToken,
  USER_SCHEMA,
} from "../helpers/scim.ts";

describeEachDb("SCIM: Users", (get) => {
  let bearer: string;
  let tenant: string;
  let admin: string;

  test("setup", async () => {
    tenant = await createTenantRow(get().app);
    admin = await adminToken(get().app);
    bearer = await scimToken(get(), admin, tenant);
  });

  test("meta.version is the ETag; If-Match with another version is 412 and nothing changes; * and the current one pass", async () => {
    const t = get();
    const created = await scim(t, bearer, "POST", "/Users", { schemas: [USER_SCHEMA], userName: "etag-user" });
    const id = created.json.id as string;
    const v1 = created.json.meta.version as string;
    const read = await scim(t, bearer, "GET", `/Users/${id}`);
    expect([read.headers.get("etag"), read.json.meta.version]).toEqual([v1, v1]);
    const changed = await scim(
      t,
      bearer,
      "PATCH",
      `/Users/${id}`,
      patchOf({ op: "replace", path: "title", value: "CEO" }),
      {
        "If-Match": v1,
      },
    );
    expect(changed.status).toBe(200);
    const v2 = changed.json.meta.version as string;
    expect(v2).not.toBe(v1);
    for (const [method, body] of [
      ["PUT", { schemas: [USER_SCHEMA], userName: "etag-user", title: "Intern" }],
      ["PATCH", patchOf({ op: "replace", path: "title", value: "Intern" })],
      ["DELETE", undefined],
    ] as const) {
      const stale = await scim(t, bearer, method, `/Users/${id}`, body, { "If-Match": v1 });
      expect([method, stale.status, stale.json]).toEqual([
        method,
        412,
        { schemas: [ERROR_SCHEMA], status: "412", detail: expect.any(String) },
      ]);
    }
    expect((await scim(t, bearer, "GET", `/Users/${id}`)).json.title).toBe("CEO");
    // a change through the REST API changes the version too
    await t.request("PUT", `/0.1/users/${id}`, {
      token: admin,
      body: { username: "etag-user", firstname: "Elsewhere" },
    });
    const v3 = (await scim(t, bearer, "GET", `/Users/${id}`)).json.meta.version;
    expect(v3).not.toBe(v2);
    const star = await scim(
      t,
      bearer,
      "PATCH",
      `/Users/${id}`,
      patchOf({ op: "replace", path: "title", value: "CTO" }),
      {
        "If-Match": "*",
      },
    );
    expect(star.status).toBe(200);
    expect(
      (await scim(t, bearer, "DELETE", `/Users/${id}`, undefined, { "If-Match": star.json.meta.version })).status,
    ).toBe(204);
  });

  test("deactivation ends the user's sessions and refresh tokens at once, with their events", async () => {
    const t = get();
    const user = await scim(t, bearer, "POST", "/Users", {
      schemas: [USER_SCHEMA],
      userName: "leaver",
      password: "pw-leaver",
    });
    const id = user.json.id as string;
    const basic = { Authorization: `Basic ${btoa("leaver:pw-leaver")}` };
    const offline = await t.request("POST", "/0.1/token", {
      headers: basic,
      body: { access_type: "offline", client_id: "softphone" },
    });
    expect(offline.status).toBe(200);
    const access = offline.json.data.token as string;
    const refresh = offline.json.data.refresh_token as string;
    const off = await scim(
      t,
      bearer,
      "PATCH",
      `/Users/${id}`,
      patchOf({ op: "Replace", path: "active", value: "False" }),
    );
    expect(off.json.active).toBe(false);
    expect((await t.request("HEAD", `/0.1/token/${access}`)).status).toBe(404);
    const again = await t.request("POST", "/0.1/token", { body: { refresh_token: refresh, client_id: "softphone" } });
    expect(again.status).toBe(401);
    expect((await t.request("POST", "/0.1/token", { headers: basic, body: {} })).status).toBe(401);
    const names = (await listRecordedEvents(t.app.db))
      .filter((e) => e.payload.data.user_uuid === id || e.payload.data.uuid === id)
      .map((e) => e.name);
    expect(names).toEqual(
      expect.arrayContaining(["auth_session_deleted", "auth_refresh_token_deleted", "auth_user_updated"]),
    );
  });

  test("a password on PUT or PATCH (Okta's sync): the same one changes nothing, a new one is set and ends the sessions", async () => {
    const t = get();
    const body = { schemas: [USER_SCHEMA], userName: "syncer", password: "first-pass" };
    const id = (await scim(t, bearer, "POST", "/Users", body)).json.id as string;
    const login = async (pw: string) =>
      t.request("POST", "/0.1/token", { headers: { Authorization: `Basic ${btoa(`syncer:${pw}`)}` }, body: {} });
    const token = (await login("first-pass")).json.data.token as string;
    expect((await scim(t, bearer, "PUT", `/Users/${id}`, { ...body, title: "Resent" })).status).toBe(200);
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(204);
    const changed = await scim(
      t,
      bearer,
      "PATCH",
      `/Users/${id}`,
      patchOf({ op: "replace", path: "password", value: "second-pass" }),
    );
    expect(changed.status).toBe(200);
    expect(changed.json.password).toBeUndefined();
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
    expect((await login("first-pass")).status).toBe(401);
    expect((await login("second-pass")).status).toBe(200);
  });

  test("every attribute is kept: the enterprise extension and unmapped ones survive a PUT that sends them", async () => {
    const t = get();
    const body = {
      schemas: [USER_SCHEMA, ENTERPRISE],
      userName: "keeper",
      title: "Engineer",
      phoneNumbers: [{ value: "+33 1 23 45 67 89", type: "work" }],
      addresses: [{ locality: "Paris", country: "FR", type: "work" }],
      "urn:example:custom:1.0": { shoeSize: 42 },
      [ENTERPRISE]: { employeeNumber: "42", costCenter: "R&D", manager: { value: "m-1", displayName: "Boss" } },
    };
    const created = await scim(t, bearer, "POST", "/Users", body);
    expect(created.json).toMatchObject({ ...body, schemas: expect.any(Array) });
    expect(created.json.schemas).toEqual([USER_SCHEMA, ENTERPRISE, "urn:example:custom:1.0"]);
    const filtered = await scim(
      t,
      bearer,
      "GET",
      `/Users?filter=${encodeURIComponent(`${ENTERPRISE}:employeeNumber eq "42"`)}`,
    );
    expect(filtered.json.Resources.map((u: { userName: string }) => u.userName)).toEqual(["keeper"]);
    const put = await scim(t, bearer, "PUT", `/Users/${created.json.id}`, {
      schemas: [USER_SCHEMA],
      userName: "keeper",
    });
    expect(put.json.title).toBeUndefined(); // PUT replaces: what it does not send is gone
    expect(put.json[ENTERPRISE]).toBeUndefined();
  });

  test("GET /users/{u}/scim says whether the directory manages a user (the console's warning)", async () => {
    const t = get();
    const managed = (await scim(t, bearer, "POST", "/Users", { userName: "managed-one", externalId: "X-9" })).json.id;
    const manual = (await t.request("POST", "/0.1/users", { token: admin, tenant, body: { username: "manual-one" } }))
      .json.uuid;
    const state = await t.request("GET", `/0.1/users/${managed}/scim`, { token: admin });
    expect(state.json).toEqual({ managed: true, external_id: "X-9", updated_at: expect.any(String) });
    expect((await t.request("GET", `/0.1/users/${manual}/scim`, { token: admin })).json).toEqual({
      managed: false,
      external_id: null,
      updated_at: null,
    });
    const stranger = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: await createTenantRow(t.app) })).token;
    expect((await t.request("GET", `/0.1/users/${managed}/scim`, { token: stranger })).status).toBe(404);
  });

  test("discovery: ServiceProviderConfig, ResourceTypes, Schemas", async () => {
    const t = get();
    const config = await scim(t, bearer, "GET", "/ServiceProviderConfig");
    expect(config.json).toMatchObject({
      patch: { supported: true },
      filter: { supported: true, maxResults: 1000 },
      sort: { supported: true },
      etag: { supported: true },
      authenticationSchemes: [expect.objectContaining({ type: "oauthbearertoken" })],
    });
    const types = await scim(t, bearer, "GET", "/ResourceTypes");
    expect(types.json.Resources.map((r: { id: string; endpoint: string }) => [r.id, r.endpoint])).toEqual([
      ["User", "/Users"],
      ["Group", "/Groups"],
    ]);
    expect((await scim(t, bearer, "GET", "/ResourceTypes/User")).json.schemaExtensions).toEqual([
      { schema: ENTERPRISE, required: false },
    ]);
    const schemas = await scim(t, bearer, "GET", "/Schemas");
    expect(schemas.json.Resources.map((s: { id: string }) => s.id)).toEqual([USER_SCHEMA, ENTERPRISE, GROUP_SCHEMA]);
    const user = await scim(t, bearer, "GET", `/Schemas/${USER_SCHEMA}`);
    const userName = user.json.attributes.find((a: { name: string }) => a.name === "userName");
    expect(userName).toMatchObject({ type: "string", required: true, caseExact: false, uniqueness: "server" });
    expect((await scim(t, bearer, "GET", "/Schemas/urn:nothing")).status).toBe(404);
  });

  test("bad input: the SCIM error body, never a 500, nothing written", async () => {
    const t = get();
    const cases: Array<[string, string, unknown, number, string | undefined]> = [
      ["POST", "/Users", { schemas: [USER_SCHEMA] }, 400, "invalidValue"],
      ["POST", "/Users", { userName: "x", emails: [{ value: "not-an-address" }] }, 400, "invalidValue"],
      ["POST", "/Users", { userName: "x", active: "maybe" }, 400, "invalidValue"],
      ["POST", "/Users", { userName: "bad:colon" }, 400, "invalidValue"],
      [
        "POST",
        "/Users",
        {
          userName: "x",
          emails: [
            { value: "a@b.example", primary: true },
            { value: "c@d.example", primary: true },
          ],
        },
        400,
        "invalidValue",
      ],
      ["GET", `/Users?filter=${encodeURIComponent("userName eq")}`, undefined, 400, "invalidFilter"],
      ["GET", "/Users?startIndex=abc", undefined, 400, "invalidValue"],
      ["GET", "/Users/not-a-uuid", undefined, 404, undefined],
    ];
    for (const [method, path, body, status, scimType] of cases) {
      const r = await scim(t, bearer, method, path, body);
      expect([method, path, r.status, r.json?.schemas, r.json?.scimType]).toEqual([
        method,
        path,
        status,
        [ERROR_SCHEMA],
        scimType,
      ]);
      expect(r.headers.get("content-type")).toBe("application/scim+json");
    }
    for (const [method, path, status] of [
      ["GET", "/Nothing", 404],
      ["POST", "/ServiceProviderConfig", 405],
      ["POST", "/Me", 405],
    ] as const) {
      const r = await scim(t, bearer, method, path, method === "POST" ? {} : undefined);
      expect([path, r.status, r.json?.schemas]).toEqual([path, status, [ERROR_SCHEMA]]);
    }
    const raw = await t.request("POST", `${SCIM}/Users`, {
      headers: { Authorization: `Bearer ${bearer}` },
      rawBody: "{not json",
    });
    expect([raw.status, raw.json.schemas, raw.json.scimType]).toEqual([400, [ERROR_SCHEMA], "invalidSyntax"]);
    const list = await scim(t, bearer, "GET", `/Users?filter=${encodeURIComponent('userName eq "x"')}`);
    expect(list.json.totalResults).toBe(0);
    // a duplicate address of another user: 409, and the user is not created half
    await scim(t, bearer, "POST", "/Users", { userName: "first", emails: [{ value: "shared@example.org" }] });
    const dup = await scim(t, bearer, "POST", "/Users", {
      userName: "second",
      emails: [{ value: "own@example.org", primary: true }, { value: "shared@example.org" }],
    });
    expect([dup.status, dup.json.scimType]).toEqual([409, "uniqueness"]);
    expect(
      (await scim(t, bearer, "GET", `/Users?filter=${encodeURIComponent('userName eq "second"')}`)).json.totalResults,
    ).toBe(0);
  });
});
