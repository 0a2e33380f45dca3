// SCIM /Me (RFC 7644 §3.11): a user's token reads its own User and changes only its profile; the
// attributes that admit or grant (active, userName, emails, password, externalId, the Enterprise
// extension) are refused with scimType mutability and nothing is written; a bearer that is no
// user's (a SCIM token, a client-credentials token) gets 501.
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken, createTenantRow, tokenFor } from "../helpers/fixtures.ts";
import { ENTERPRISE, ERROR_SCHEMA, patchOf, scim, scimToken, USER_SCHEMA } from "../helpers/scim.ts";

describeEachDb("SCIM: /Me", (get) => {
  let tenant: string;
  let directory: string;
  let user: string;
  const reader = async (acl: string[]) =>
    (await tokenFor(get().app, { acl, userUuid: user, tenantUuid: tenant })).token;

  test("setup: a user the directory provisioned", async () => {
    const t = get();
    tenant = await createTenantRow(t.app);
    directory = await scimToken(t, await adminToken(t.app), tenant);
    const created = await scim(t, directory, "POST", "/Users", {
      schemas: [USER_SCHEMA, ENTERPRISE],
      userName: "me-alice",
      name: { givenName: "Alice", familyName: "Martin" },
      emails: [{ value: "alice@me.example", primary: true, type: "work" }],
      [ENTERPRISE]: { department: "Sales" },
    });
    expect(created.status).toBe(201);
    user = created.json.id;
  });

  test("GET /Me with the user's own auth.users.me.read: the same resource as /Users/{id}", async () => {
    const t = get();
    const me = await scim(t, await reader(["auth.users.me.read"]), "GET", "/Me");
    const byId = await scim(t, directory, "GET", `/Users/${user}`);
    expect(me.status).toBe(200);
    expect(me.json).toEqual(byId.json);
    expect(me.headers.get("etag")).toBe(byId.json.meta.version);
  });

  test("no bearer: 401; a user's token without the access: 403; both in the SCIM error form", async () => {
    const t = get();
    const none = await t.request("GET", "/0.1/scim/v2/Me");
    expect([none.status, none.json.schemas]).toEqual([401, [ERROR_SCHEMA]]);
    const noRead = await scim(t, await reader(["auth.scim.me.update"]), "GET", "/Me");
    expect([noRead.status, noRead.json.schemas]).toEqual([403, [ERROR_SCHEMA]]);
    const noWrite = await scim(
      t,
      await reader(["auth.users.me.read"]),
      "PATCH",
      "/Me",
      patchOf({ op: "replace", path: "title", value: "x" }),
    );
    expect(noWrite.status).toBe(403);
    const noDelete = await scim(t, await reader(["auth.users.me.read", "auth.scim.me.update"]), "DELETE", "/Me");
    expect(noDelete.status).toBe(403);
  });

  test("a bearer that is no user's: 501 (§3.11), for a SCIM token and a client-credentials token", async () => {
    const t = get();
    for (const method of ["GET", "PUT", "PATCH", "DELETE"]) {
      const r = await scim(t, directory, method, "/Me", method === "GET" || method === "DELETE" ? undefined : {});
      expect([method, r.status, r.json]).toEqual([
        method,
        501,
        { schemas: [ERROR_SCHEMA], status: "501", detail: expect.stringContaining("§3.11") },
      ]);
    }
    const admin = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant });
    const client = await t.request("POST", "/0.1/oidc/clients", {
      token: admin.token,
      tenant,
      body: {
        name: "daemon",
        client_type: "confidential",
        redirect_uris: [],
        grant_types: ["client_credentials"],
        acl: ["auth.users.me.read"],
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
    const r = await scim(t, issued.json.access_token, "GET", "/Me");
    expect([r.status, r.json.status]).toEqual([501, "501"]);
  });

  test("PATCH /Me changes the profile; active, userName, emails, password, externalId, the extension: 400 mutability, nothing written", async () => {
    const t = get();
    const me = await reader(["auth.users.me.read", "auth.scim.me.update"]);
    const ok = await scim(
      t,
      me,
      "PATCH",
      "/Me",
      patchOf(
        { op: "replace", path: "name.givenName", value: "Alicia" },
        { op: "add", path: "title", value: "Engineer" },
      ),
    );
    expect(ok.status).toBe(200);
    expect([ok.json.name.givenName, ok.json.title]).toEqual(["Alicia", "Engineer"]);
    const before = (await scim(t, directory, "GET", `/Users/${user}`)).json;
    for (const op of [
      { op: "replace", path: "active", value: false },
      { op: "Replace", value: { active: "False" } },
      { op: "replace", path: "userName", value: "me-admin" },
      { op: "add", path: "emails", value: [{ value: "ceo@me.example", type: "other" }] },
      { op: "replace", path: 'emails[type eq "work"].value', value: "ceo@me.example" },
      { op: "remove", path: "emails" },
      { op: "replace", path: "password", value: "new-secret" },
      { op: "replace", path: "externalId", value: "other" },
      { op: "replace", path: `${ENTERPRISE}:department`, value: "Board" },
    ]) {
      const r = await scim(t, me, "PATCH", "/Me", patchOf({ op: "replace", path: "title", value: "CEO" }, op));
      expect([JSON.stringify(op), r.status, r.json.scimType]).toEqual([JSON.stringify(op), 400, "mutability"]);
    }
    expect((await scim(t, directory, "GET", `/Users/${user}`)).json).toEqual(before);
  });

  test("PUT /Me: the profile replaced when the protected attributes are resent as they are; else 400 mutability", async () => {
    const t = get();
    const me = await reader(["auth.users.me.read", "auth.scim.me.update"]);
    const current = (await scim(t, me, "GET", "/Me")).json;
    const { id: _id, meta: _meta, ...resent } = current;
    const ok = await scim(t, me, "PUT", "/Me", { ...resent, name: { givenName: "Alice", familyName: "Durand" } });
    expect([ok.status, ok.json.name.familyName, ok.json.active]).toEqual([200, "Durand", true]);
    const { emails: _emails, ...withoutEmails } = resent;
    const refused = await scim(t, me, "PUT", "/Me", withoutEmails);
    expect([refused.status, refused.json.scimType]).toEqual([400, "mutability"]);
    expect((await scim(t, me, "GET", "/Me")).json.emails).toEqual(current.emails);
  });

  test("DELETE /Me with auth.scim.me.delete: the user is gone, and its token with it", async () => {
    const t = get();
    const me = await reader(["auth.users.me.read", "auth.scim.me.delete"]);
    expect((await scim(t, me, "DELETE", "/Me")).status).toBe(204);
    expect((await scim(t, directory, "GET", `/Users/${user}`)).status).toBe(404);
    expect((await scim(t, me, "GET", "/Me")).status).toBe(401);
  });
});
