// POST /0.1/users/password/reset?user_uuid=<own uuid>: an administrator's token (the reset ACL) may
// set other users' passwords, never its own user's — that is a change, with the old password
// (PUT /users/{uuid}/password), else a stolen administrator token takes the account over for good
// (docs/wazo-auth-differences.md D17).
import { beforeAll, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";

const basic = (login: string, password: string) => `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`;

describeEachDb("password reset of one's own user", (get) => {
  let tenant = "";
  beforeAll(async () => {
    tenant = await createTenantRow(get().app);
  });

  test("refused for the caller's own uuid, in any case; the password and sessions stay", async () => {
    const t = get();
    const me = await createUserRow(t.app, { tenantUuid: tenant, username: "root-admin", password: "old-password-1" });
    const admin = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant, userUuid: me });
    for (const uuid of [me, me.toUpperCase()]) {
      for (const password of ["taken-over-pw-1", null]) {
        const r = await t.request("POST", `/0.1/users/password/reset?user_uuid=${uuid}`, {
          token: admin.token,
          body: { password },
        });
        expect(r.status).toBe(403);
        expect(r.json.error_id).toBe("forbidden");
        expect(r.json.resource).toBe("reset");
        expect(r.json.message).toContain("PUT /0.1/users/{user_uuid}/password");
        expect(r.json.message).toContain("old password");
      }
    }
    // Nothing changed: the old password logs in, the new one does not, the token still works.
    const old = await t.request("POST", "/0.1/token", {
      headers: { Authorization: basic("root-admin", "old-password-1") },
      body: {},
    });
    expect(old.status).toBe(200);
    const stolen = await t.request("POST", "/0.1/token", {
      headers: { Authorization: basic("root-admin", "taken-over-pw-1") },
      body: {},
    });
    expect(stolen.status).toBe(401);
    expect((await t.request("HEAD", `/0.1/token/${admin.token}`)).status).toBe(204);
    // The way that is allowed: the change with the old password.
    const change = await t.request("PUT", `/0.1/users/${me}/password`, {
      token: admin.token,
      body: { old_password: "old-password-1", new_password: "new-password-2" },
    });
    expect(change.status).toBe(204);
  });

  test("another user's password is still set by the administrator", async () => {
    const t = get();
    const admin = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant });
    const other = await createUserRow(t.app, { tenantUuid: tenant, username: "someone", password: "first-pw-1" });
    const r = await t.request("POST", `/0.1/users/password/reset?user_uuid=${other}`, {
      token: admin.token,
      body: { password: "second-pw-2" },
    });
    expect(r.status).toBe(204);
    const login = await t.request("POST", "/0.1/token", {
      headers: { Authorization: basic("someone", "second-pw-2") },
      body: {},
    });
    expect(login.status).toBe(200);
  });
});
