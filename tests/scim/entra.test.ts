// Microsoft Entra ID's provisioning, request by request as its SCIM documentation lists them
// (Microsoft Learn, "Tutorial: Develop and plan provisioning for a SCIM endpoint", the requests
// its SCIM validator sends): the existence check, creation with the Enterprise extension, PATCH
// with PascalCase `op`s and value-filtered paths, deactivation, groups and their members.
import { expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { execRows } from "../../src/db/index.ts";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken, createTenantRow } from "../helpers/fixtures.ts";
import { ENTERPRISE, ERROR_SCHEMA, GROUP_SCHEMA, patchOf, scim, scimToken, USER_SCHEMA } from "../helpers/scim.ts";

describeEachDb("SCIM: Microsoft Entra ID's requests", (get) => {
  let bearer: string;
  let userId: string;
  let groupId: string;
  const userName = `Test_User_${crypto.randomUUID()}`;

  test("setup: a tenant and its SCIM token", async () => {
    const t = get();
    const tenant = await createTenantRow(t.app);
    bearer = await scimToken(t, await adminToken(t.app), tenant);
    expect(bearer.startsWith("tscim_")).toBe(true);
  });

  test("Get User by query, zero results: a ListResponse with totalResults 0", async () => {
    const r = await scim(get(), bearer, "GET", `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/scim+json");
    expect(r.json).toEqual({
      schemas: ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
      totalResults: 0,
      startIndex: 1,
      itemsPerPage: 0,
      Resources: [],
    });
  });

  test("Create User: 201, every attribute kept, the enterprise extension included", async () => {
    const body = {
      schemas: [USER_SCHEMA, ENTERPRISE],
      externalId: "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
      userName,
      active: true,
      emails: [{ primary: true, type: "work", value: `${userName}@testuser.com` }],
      meta: { resourceType: "User" },
      name: { formatted: "givenName familyName", familyName: "familyName", givenName: "givenName" },
      roles: [],
      [ENTERPRISE]: { employeeNumber: "701984", department: "Sales", manager: { value: "boss-id" } },
    };
    const r = await scim(get(), bearer, "POST", "/Users", body);
    expect(r.status).toBe(201);
    userId = r.json.id;
    expect(r.headers.get("location")).toBe(r.json.meta.location);
    expect(r.headers.get("etag")).toBe(r.json.meta.version);
    expect(r.json.meta.version).toMatch(/^W\/"/);
    expect(r.json).toMatchObject({
      schemas: [USER_SCHEMA, ENTERPRISE],
      externalId: body.externalId,
      userName,
      active: true,
      emails: [{ primary: true, type: "work", value: `${userName}@testuser.com` }],
      name: body.name,
      roles: [],
      [ENTERPRISE]: body[ENTERPRISE],
      meta: { resourceType: "User" },
    });
    // the REST API sees the same user: names mapped, the address confirmed (the directory is the authority)
    const admin = await adminToken(get().app);
    const rest = await get().request("GET", `/0.1/users/${userId}`, { token: admin });
    expect(rest.json).toMatchObject({
      username: userName,
      firstname: "givenName",
      lastname: "familyName",
      enabled: true,
      emails: [{ address: `${userName}@testuser.com`, main: true, confirmed: true }],
    });
  });

  test("Create User again: 409 uniqueness, the SCIM error body", async () => {
    const r = await scim(get(), bearer, "POST", "/Users", { schemas: [USER_SCHEMA], userName });
    expect(r.status).toBe(409);
    expect(r.json).toMatchObject({ schemas: [ERROR_SCHEMA], status: "409", scimType: "uniqueness" });
    expect(typeof r.json.detail).toBe("string");
  });

  test('Get User by query: userName, externalId, and Entra\'s emails[type eq "work"].value', async () => {
    for (const filter of [
      `userName eq "${userName}"`,
      `userName eq "${userName.toUpperCase()}"`, // userName is not case-exact
      'externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"',
      `emails[type eq "work"].value eq "${userName}@testuser.com"`,
    ]) {
      const r = await scim(get(), bearer, "GET", `/Users?filter=${encodeURIComponent(filter)}`);
      expect([filter, r.status, r.json.totalResults]).toEqual([filter, 200, 1]);
      expect(r.json.Resources[0].id).toBe(userId);
    }
    // externalId is case-exact
    const r = await scim(
      get(),
      bearer,
      "GET",
      `/Users?filter=${encodeURIComponent('externalId eq "0A21F0F2-8D2A-4F8E-BF98-7363C4AED4EF"')}`,
    );
    expect(r.json.totalResults).toBe(0);
  });

  test('Update User [Multi-valued properties]: Replace emails[type eq "work"].value and name.familyName', async () => {
    const r = await scim(
      get(),
      bearer,
      "PATCH",
      `/Users/${userId}`,
      patchOf(
        { op: "Replace", path: 'emails[type eq "work"].value', value: "updatedEmail@microsoft.com" },
        { op: "Replace", path: "name.familyName", value: "updatedFamilyName" },
      ),
    );
    expect(r.status).toBe(200);
    expect(r.json.emails).toEqual([{ primary: true, type: "work", value: "updatedEmail@microsoft.com" }]);
    expect(r.json.name.familyName).toBe("updatedFamilyName");
    const [entry] = await execRows<{ changes: Array<{ field: string; new: unknown }> }>(
      get().app.db,
      sql`select changes from tessera.audit where target_uuid = ${userId} and action = 'user.emails.update'`,
    );
    expect(entry!.changes[0]!.new).toEqual([{ address: "updatedEmail@microsoft.com", main: true, confirmed: true }]);
  });

  test("Update User [Single-valued properties]: Replace userName", async () => {
    const next = `${crypto.randomUUID()}@testuser.com`;
    const r = await scim(
      get(),
      bearer,
      "PATCH",
      `/Users/${userId}`,
      patchOf({ op: "Replace", path: "userName", value: next }),
    );
    expect(r.status).toBe(200);
    expect(r.json.userName).toBe(next);
  });

  test('Disable User: Replace active false (and Entra\'s string boolean "False")', async () => {
    let r = await scim(
      get(),
      bearer,
      "PATCH",
      `/Users/${userId}`,
      patchOf({ op: "Replace", path: "active", value: false }),
    );
    expect(r.status).toBe(200);
    expect(r.json.active).toBe(false);
    r = await scim(
      get(),
      bearer,
      "PATCH",
      `/Users/${userId}`,
      patchOf({ op: "Replace", path: "active", value: "True" }),
    );
    expect(r.json.active).toBe(true);
    r = await scim(get(), bearer, "PATCH", `/Users/${userId}`, patchOf({ op: "Replace", value: { active: "False" } }));
    expect(r.json.active).toBe(false);
    const filtered = await scim(get(), bearer, "GET", `/Users?filter=${encodeURIComponent(`active eq false`)}`);
    expect(filtered.json.Resources.map((u: { id: string }) => u.id)).toContain(userId);
    expect(filtered.json.Resources.find((u: { id: string }) => u.id === userId).active).toBe(false);
  });

  test("Add where Replace is meant: Add on a single-valued attribute replaces it", async () => {
    const r = await scim(
      get(),
      bearer,
      "PATCH",
      `/Users/${userId}`,
      patchOf({ op: "Add", path: "displayName", value: "Shown" }),
    );
    expect(r.status).toBe(200);
    expect(r.json.displayName).toBe("Shown");
    const again = await scim(
      get(),
      bearer,
      "PATCH",
      `/Users/${userId}`,
      patchOf({ op: "Add", path: "displayName", value: "Shown2" }),
    );
    expect(again.json.displayName).toBe("Shown2");
  });

  test("Create Group, Get Group with excludedAttributes=members, by displayName", async () => {
    const t = get();
    const r = await scim(t, bearer, "POST", "/Groups", {
      schemas: [GROUP_SCHEMA, "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group"],
      externalId: "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
      displayName: "displayName",
      meta: { resourceType: "Group" },
    });
    expect(r.status).toBe(201);
    groupId = r.json.id;
    expect(r.json).toMatchObject({
      displayName: "displayName",
      externalId: "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
      members: [],
    });
    const one = await scim(t, bearer, "GET", `/Groups/${groupId}?excludedAttributes=members`);
    expect(one.status).toBe(200);
    expect(one.json.members).toBeUndefined();
    expect(one.json.displayName).toBe("displayName");
    const found = await scim(
      t,
      bearer,
      "GET",
      `/Groups?excludedAttributes=members&filter=${encodeURIComponent('displayName eq "displayName"')}`,
    );
    expect(found.json.totalResults).toBe(1);
    expect(found.json.Resources[0].id).toBe(groupId);
    expect(found.json.Resources[0].members).toBeUndefined();
  });

  test("Update Group: Replace displayName; Add members; Remove members", async () => {
    const t = get();
    let r = await scim(
      t,
      bearer,
      "PATCH",
      `/Groups/${groupId}`,
      patchOf({ op: "Replace", path: "displayName", value: "updatedDisplayName" }),
    );
    expect(r.status).toBe(200);
    expect(r.json.displayName).toBe("updatedDisplayName");
    r = await scim(
      t,
      bearer,
      "PATCH",
      `/Groups/${groupId}`,
      patchOf({ op: "Add", path: "members", value: [{ $ref: null, value: userId }] }),
    );
    expect(r.status).toBe(200);
    expect(r.json.members.map((m: { value: string }) => m.value)).toEqual([userId]);
    const user = await scim(t, bearer, "GET", `/Users/${userId}`);
    expect(user.json.groups).toEqual([expect.objectContaining({ value: groupId, display: "updatedDisplayName" })]);
    const members = await scim(
      t,
      bearer,
      "GET",
      `/Groups?filter=${encodeURIComponent(`members[value eq "${userId}"]`)}`,
    );
    expect(members.json.Resources.map((g: { id: string }) => g.id)).toEqual([groupId]);
    r = await scim(
      t,
      bearer,
      "PATCH",
      `/Groups/${groupId}`,
      patchOf({ op: "Remove", path: "members", value: [{ $ref: null, value: userId }] }),
    );
    expect(r.json.members).toEqual([]);
  });

  test("Delete Group, Delete User: 204, then 404 in the SCIM form", async () => {
    const t = get();
    expect((await scim(t, bearer, "DELETE", `/Groups/${groupId}`)).status).toBe(204);
    expect((await scim(t, bearer, "DELETE", `/Users/${userId}`)).status).toBe(204);
    const gone = await scim(t, bearer, "GET", `/Users/${userId}`);
    expect(gone.status).toBe(404);
    expect(gone.json).toMatchObject({ schemas: [ERROR_SCHEMA], status: "404" });
    expect((await scim(t, bearer, "DELETE", `/Users/${userId}`)).status).toBe(404);
  });
});
