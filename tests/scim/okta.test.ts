// Okta's SCIM 2.0 provisioning, request by request as Okta's "SCIM 2.0 protocol" reference
// documents them: "Test Connection" (GET /Users?startIndex=1&count=2), the existence check before a
// creation, the creation (password and locale included), the full-object PUT, deactivation by PATCH
// and by PUT, and the group pushes (POST, PATCH replace, members added and removed, PUT).
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken, createTenantRow } from "../helpers/fixtures.ts";
import { GROUP_SCHEMA, patchOf, scim, scimToken, USER_SCHEMA } from "../helpers/scim.ts";

describeEachDb("SCIM: Okta's requests", (get) => {
  let bearer: string;
  let tenant: string;
  let userId: string;
  let groupId: string;
  const userName = `test.user.${crypto.randomUUID().slice(0, 8)}@okta.local`;

  test("setup", async () => {
    const t = get();
    tenant = await createTenantRow(t.app);
    bearer = await scimToken(t, await adminToken(t.app), tenant);
  });

  test("Test Connection: GET /Users?startIndex=1&count=2", async () => {
    const r = await scim(get(), bearer, "GET", "/Users?startIndex=1&count=2");
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ totalResults: 0, startIndex: 1, itemsPerPage: 0, Resources: [] });
  });

  test("Create: the existence check finds nothing, POST creates (password, locale and groups as Okta sends them)", async () => {
    const t = get();
    const check = await scim(
      t,
      bearer,
      "GET",
      `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}&startIndex=1&count=100`,
    );
    expect(check.json.totalResults).toBe(0);
    const r = await scim(t, bearer, "POST", "/Users", {
      schemas: [USER_SCHEMA],
      userName,
      name: { givenName: "Test", familyName: "User" },
      emails: [{ primary: true, value: userName, type: "work" }],
      displayName: "Test User",
      locale: "en-US",
      externalId: "00ujl29u0le5T6Aj10h7",
      groups: [],
      password: "1mz050nq",
      active: true,
    });
    expect(r.status).toBe(201);
    userId = r.json.id;
    expect(r.json).toMatchObject({
      userName,
      displayName: "Test User",
      locale: "en-US",
      externalId: "00ujl29u0le5T6Aj10h7",
      active: true,
    });
    expect(r.json.password).toBeUndefined();
    // the password was set: the user can log in with it
    const login = await t.request("POST", "/0.1/token", {
      body: { expiration: 60 },
      headers: { Authorization: `Basic ${btoa(`${userName}:1mz050nq`)}` },
    });
    expect(login.status).toBe(200);
    const again = await scim(
      t,
      bearer,
      "GET",
      `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}&startIndex=1&count=100`,
    );
    expect(again.json.totalResults).toBe(1);
    expect(again.json.Resources[0].id).toBe(userId);
  });

  test("Update: full-object PUT, then deactivation by PUT ends the user's sessions", async () => {
    const t = get();
    const current = (await scim(t, bearer, "GET", `/Users/${userId}`)).json;
    const login = await t.request("POST", "/0.1/token", {
      body: { expiration: 600 },
      headers: { Authorization: `Basic ${btoa(`${userName}:1mz050nq`)}` },
    });
    const userToken = login.json.data.token as string;
    expect((await t.request("HEAD", `/0.1/token/${userToken}`)).status).toBe(204);
    const put = await scim(t, bearer, "PUT", `/Users/${userId}`, {
      ...current,
      name: { givenName: "Tess", familyName: "User" },
    });
    expect(put.status).toBe(200);
    expect(put.json.name).toEqual({ givenName: "Tess", familyName: "User" });
    expect((await t.request("HEAD", `/0.1/token/${userToken}`)).status).toBe(204);
    const off = await scim(t, bearer, "PUT", `/Users/${userId}`, { ...put.json, active: false });
    expect(off.status).toBe(200);
    expect(off.json.active).toBe(false);
    expect((await t.request("HEAD", `/0.1/token/${userToken}`)).status).toBe(404);
  });

  test("Deactivation by PATCH (no path), reactivation", async () => {
    const t = get();
    const on = await scim(t, bearer, "PATCH", `/Users/${userId}`, patchOf({ op: "replace", value: { active: true } }));
    expect(on.json.active).toBe(true);
    const off = await scim(
      t,
      bearer,
      "PATCH",
      `/Users/${userId}`,
      patchOf({ op: "replace", value: { active: false } }),
    );
    expect(off.status).toBe(200);
    expect(off.json.active).toBe(false);
  });

  test("Groups: POST, PATCH replace (no path), members added and removed, PUT", async () => {
    const t = get();
    const created = await scim(t, bearer, "POST", "/Groups", {
      schemas: [GROUP_SCHEMA],
      displayName: "Test SCIMv2",
      members: [],
    });
    expect(created.status).toBe(201);
    groupId = created.json.id;
    let r = await scim(
      t,
      bearer,
      "PATCH",
      `/Groups/${groupId}`,
      patchOf({ op: "replace", value: { id: groupId, displayName: "Test SCIMv2 renamed" } }),
    );
    expect(r.json.displayName).toBe("Test SCIMv2 renamed");
    r = await scim(
      t,
      bearer,
      "PATCH",
      `/Groups/${groupId}`,
      patchOf({ op: "add", path: "members", value: [{ value: userId, display: userName }] }),
    );
    expect(r.json.members).toEqual([expect.objectContaining({ value: userId, display: userName })]);
    r = await scim(
      t,
      bearer,
      "PATCH",
      `/Groups/${groupId}`,
      patchOf({ op: "remove", path: `members[value eq "${userId}"]` }),
    );
    expect(r.json.members).toEqual([]);
    r = await scim(t, bearer, "PUT", `/Groups/${groupId}`, {
      schemas: [GROUP_SCHEMA],
      id: groupId,
      displayName: "Test SCIMv2",
      members: [{ value: userId, display: userName }],
    });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ displayName: "Test SCIMv2", members: [{ value: userId }] });
    // the membership is the wazo API's
    const admin = await adminToken(t.app);
    const rest = await t.request("GET", `/0.1/groups/${groupId}/users`, { token: admin, tenant });
    expect(rest.json.items.map((u: { uuid: string }) => u.uuid)).toEqual([userId]);
  });
});
