import { expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { users } from "../../src/db/schema.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";

const config = {
  plugins: {
    idp: {
      testidp: { module: "./tests/fixtures/plugins/test-idp.ts", priority: 5, config: { secret: "s3" } },
      broken: { module: "./tests/fixtures/plugins/broken-idp.ts", priority: 1 },
      incomplete: { module: "./tests/fixtures/plugins/missing-member-idp.ts" },
    },
  },
};

describeEachDb(
  "identity providers",
  (get) => {
    test("GET /0.1/idp lists native, default and loaded IdPs; a plugin lacking a member is reported", async () => {
      const t = get();
      const { token } = await tokenFor(t.app, { acl: ["auth.idp.read", "auth.status.read"] });
      const r = await t.request("GET", "/0.1/idp", { token });
      expect(r.status).toBe(200);
      expect(r.json.items.sort()).toEqual(["broken", "default", "native", "testidp"]);
      expect(r.json.total).toBe(4);
      const s = await t.request("GET", "/0.1/status", { token });
      expect(s.json.plugins.incomplete).toMatchObject({ status: "fail", kind: "idp" });
      expect(s.json.plugins.incomplete.error).toContain("verifyAuth");
      expect(s.json.plugins.testidp.status).toBe("ok");
    });

    test("a third-party IdP logs in a user configured with its method; others are refused", async () => {
      const t = get();
      const uuid = await createUserRow(t.app, { username: "idpuser", password: "pw" });
      const login = (h: string) => t.request("POST", "/0.1/token", { body: {}, headers: { "X-Test-Idp-Login": h } });
      expect((await login("s3:idpuser")).status).toBe(401); // method is still `default` → native
      await t.app.db.update(users).set({ authenticationMethod: "testidp" }).where(eq(users.uuid, uuid));
      const ok = await login("s3:idpuser");
      expect(ok.status).toBe(200);
      expect(ok.json.data.auth_id).toBe(uuid);
      expect((await login("wrong:idpuser")).status).toBe(401);
      // native login is refused for a testidp user
      const native = await t.request("POST", "/0.1/token", {
        body: {},
        headers: { Authorization: `Basic ${btoa("idpuser:pw")}` },
      });
      expect(native.status).toBe(401);
    });

    test("PUT/DELETE /idp/{type}/users/{u} assign methods within the caller's tenants", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const sibling = await createTenantRow(t.app);
      const user = await createUserRow(t.app, { tenantUuid: tenant });
      const admin = (await tokenFor(t.app, { acl: ["auth.idp.#"], tenantUuid: tenant })).token;
      const outsider = (await tokenFor(t.app, { acl: ["auth.idp.#"], tenantUuid: sibling })).token;
      const method = async () =>
        (await t.app.db.select().from(users).where(eq(users.uuid, user)))[0]!.authenticationMethod;
      expect((await t.request("PUT", `/0.1/idp/testidp/users/${user}`, { token: outsider })).status).toBe(404);
      expect(await method()).toBe("default");
      expect((await t.request("PUT", `/0.1/idp/testidp/users/${user}`, { token: admin })).status).toBe(204);
      expect(await method()).toBe("testidp");
      const unknown = await t.request("PUT", `/0.1/idp/nope/users/${user}`, { token: admin });
      expect(unknown.status).toBe(404);
      expect(unknown.json).toMatchObject({ error_id: "not-found", resource: "idp" });
      // an outsider's delete touches nothing and answers like an absent user (D4 of docs/wazo-auth-differences.md, D9)
      expect((await t.request("DELETE", `/0.1/idp/testidp/users/${user}`, { token: outsider })).status).toBe(204);
      expect(await method()).toBe("testidp");
      expect((await t.request("DELETE", `/0.1/idp/native/users/${user}`, { token: admin })).status).toBe(204);
      expect(await method()).toBe("testidp");
      expect((await t.request("DELETE", `/0.1/idp/testidp/users/${user}`, { token: admin })).status).toBe(204);
      expect(await method()).toBe("default");
    });

    test("PUT /idp/{type}/users is all or nothing", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const mine = await createUserRow(t.app, { tenantUuid: tenant });
      const theirs = await createUserRow(t.app, { tenantUuid: await createTenantRow(t.app) });
      const admin = (await tokenFor(t.app, { acl: ["auth.idp.#"], tenantUuid: tenant })).token;
      const r = await t.request("PUT", "/0.1/idp/testidp/users", {
        token: admin,
        body: { users: [{ uuid: mine }, { uuid: theirs }] },
      });
      expect(r.status).toBe(404);
      expect((await t.app.db.select().from(users).where(eq(users.uuid, mine)))[0]!.authenticationMethod).toBe(
        "default",
      );
      const bad = await t.request("PUT", "/0.1/idp/testidp/users", {
        token: admin,
        body: { users: [{ uuid: "nope" }] },
      });
      expect(bad.status).toBe(400);
      expect(bad.json.details.users["0"].uuid.constraint_id).toBe("uuid");
      expect(
        (await t.request("PUT", "/0.1/idp/testidp/users", { token: admin, body: { users: [{ uuid: mine }] } })).status,
      ).toBe(204);
      expect((await t.app.db.select().from(users).where(eq(users.uuid, mine)))[0]!.authenticationMethod).toBe(
        "testidp",
      );
    });
  },
  { config },
);
