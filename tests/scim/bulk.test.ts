// Bulk (RFC 7644 §3.7): the §3.7.2 example (a user, then a group whose member is `bulkId:qwerty`),
// references in any order, an unresolvable one, failOnErrors, and per-operation access checks.
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken, createTenantRow, tokenFor } from "../helpers/fixtures.ts";
import { ERROR_SCHEMA, GROUP_SCHEMA, scim, scimToken, USER_SCHEMA } from "../helpers/scim.ts";

const BULK = "urn:ietf:params:scim:api:messages:2.0:BulkRequest";
const name = () => `b${crypto.randomUUID().slice(0, 8)}`;

describeEachDb("SCIM: Bulk", (get) => {
  let bearer: string;
  let tenant: string;

  test("setup", async () => {
    tenant = await createTenantRow(get().app);
    bearer = await scimToken(get(), await adminToken(get().app), tenant);
    const config = await scim(get(), bearer, "GET", "/ServiceProviderConfig");
    expect(config.json.bulk).toMatchObject({ supported: true, maxOperations: 1000 });
  });

  test("RFC 7644 §3.7.2: a group created with a member named by the bulkId of a user created before it", async () => {
    const t = get();
    const userName = name();
    const r = await scim(t, bearer, "POST", "/Bulk", {
      schemas: [BULK],
      Operations: [
        { method: "POST", path: "/Users", bulkId: "qwerty", data: { schemas: [USER_SCHEMA], userName } },
        {
          method: "POST",
          path: "/Groups",
          bulkId: "ytrewq",
          data: {
            schemas: [GROUP_SCHEMA],
            displayName: "Tour Guides",
            members: [{ type: "User", value: "bulkId:qwerty" }],
          },
        },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.json.schemas).toEqual(["urn:ietf:params:scim:api:messages:2.0:BulkResponse"]);
    expect(r.json.Operations.map((o: { status: string; bulkId: string }) => [o.bulkId, o.status])).toEqual([
      ["qwerty", "201"],
      ["ytrewq", "201"],
    ]);
    const group = await scim(
      t,
      bearer,
      "GET",
      new URL(r.json.Operations[1].location).pathname.replace("/0.1/scim/v2", ""),
    );
    const user = await scim(
      t,
      bearer,
      "GET",
      new URL(r.json.Operations[0].location).pathname.replace("/0.1/scim/v2", ""),
    );
    expect(group.json.members.map((m: { value: string }) => m.value)).toEqual([user.json.id]);
    // the version changed since: the user joined the group (its `groups`)
    expect(r.json.Operations[0].version).toMatch(/^W\//);
    expect(r.json.Operations[0].version).not.toBe(user.json.meta.version);
  });

  test("a reference to a later operation waits for it; PATCH and DELETE by bulkId; an unresolvable reference is 409", async () => {
    const t = get();
    const r = await scim(t, bearer, "POST", "/Bulk", {
      schemas: [BULK],
      Operations: [
        {
          method: "POST",
          path: "/Groups",
          bulkId: "g",
          data: { displayName: name(), members: [{ value: "bulkId:u" }] },
        },
        { method: "POST", path: "/Users", bulkId: "u", data: { userName: name() } },
        {
          method: "PATCH",
          path: "/Users/bulkId:u",
          data: {
            schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            Operations: [{ op: "replace", value: { active: false } }],
          },
        },
        {
          method: "POST",
          path: "/Groups",
          bulkId: "never",
          data: { displayName: name(), members: [{ value: "bulkId:nobody" }] },
        },
        { method: "DELETE", path: "/Groups/bulkId:g" },
      ],
    });
    expect(r.status).toBe(200);
    const byKey = Object.fromEntries(
      r.json.Operations.map((o: { method: string; bulkId?: string; status: string }) => [
        `${o.method} ${o.bulkId ?? ""}`,
        o,
      ]),
    );
    expect(byKey["POST g"].status).toBe("201");
    expect(byKey["POST u"].status).toBe("201");
    expect(byKey["PATCH "].status).toBe("200");
    expect(byKey["DELETE "].status).toBe("204");
    expect(byKey["POST never"]).toMatchObject({ status: "409", response: { schemas: [ERROR_SCHEMA], status: "409" } });
    const users = await scim(t, bearer, "GET", `/Users?filter=${encodeURIComponent("active eq false")}`);
    expect(users.json.totalResults).toBe(1);
  });

  test("failOnErrors stops after that many errors; each operation needs its own access", async () => {
    const t = get();
    const r = await scim(t, bearer, "POST", "/Bulk", {
      schemas: [BULK],
      failOnErrors: 1,
      Operations: [
        { method: "POST", path: "/Users", bulkId: "a", data: { userName: "" } },
        { method: "POST", path: "/Users", bulkId: "b", data: { userName: name() } },
      ],
    });
    expect(r.json.Operations).toEqual([
      expect.objectContaining({
        bulkId: "a",
        status: "400",
        response: expect.objectContaining({ scimType: "invalidValue" }),
      }),
    ]);
    const reader = await tokenFor(t.app, {
      acl: ["auth.scim.bulk.create", "auth.scim.users.read"],
      tenantUuid: tenant,
    });
    const refused = await scim(t, reader.token, "POST", "/Bulk", {
      schemas: [BULK],
      Operations: [{ method: "POST", path: "/Users", bulkId: "c", data: { userName: name() } }],
    });
    expect(refused.json.Operations[0]).toMatchObject({ status: "403", response: { status: "403" } });
    const malformed = await scim(t, bearer, "POST", "/Bulk", { Operations: [] });
    expect(malformed.status).toBe(400);
    expect(malformed.json).toMatchObject({ schemas: [ERROR_SCHEMA], scimType: "invalidSyntax" });
  });
});
