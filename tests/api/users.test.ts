import { expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { users } from "../../src/db/schema.ts";
import { describeEachDb } from "../helpers/app.ts";
import { tenantFamily } from "../helpers/fixtures.ts";

const basic = (l: string, p: string) => ({ Authorization: `Basic ${btoa(`${l}:${p}`)}` });

describeEachDb("users", (get) => {
  async function admins() {
    const t = get();
    return { t, ...(await tenantFamily(t.app)) };
  }
  const uniq = () => crypto.randomUUID().slice(0, 8);

  test("create returns the user JSON; the user can log in; joins the all-users group", async () => {
    const { t, tenant, admin } = await admins();
    const name = `alice${uniq()}`;
    const r = await t.request("POST", "/0.1/users", {
      token: admin,
      body: {
        username: name,
        firstname: "Alice",
        password: "pw",
        email_address: `${name}@example.com`,
        tenant_uuid: "ignored",
      },
    });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      username: name,
      firstname: "Alice",
      lastname: null,
      purpose: "user",
      authentication_method: "default",
      enabled: true,
      tenant_uuid: tenant,
    });
    expect(r.json.emails).toEqual([
      { uuid: expect.any(String), address: `${name}@example.com`, main: true, confirmed: true },
    ]);
    expect(JSON.stringify(r.json)).not.toContain('pw"');
    expect(
      (await t.request("POST", "/0.1/token", { body: {}, headers: basic(`${name}@EXAMPLE.com`, "pw") })).status,
    ).toBe(200);
    const groups = await t.app.db.query.userGroups.findMany({ where: (g, { eq }) => eq(g.userUuid, r.json.uuid) });
    expect(groups.length).toBe(1);
    const internal = await t.request("POST", "/0.1/users", { token: admin, body: { purpose: "internal" } });
    expect(internal.json.authentication_method).toBe("native");
  });

  test("conflicts across usernames and emails, case-insensitive", async () => {
    const { t, admin, siblingAdmin } = await admins();
    const name = `bob${uniq()}`;
    const u = (
      await t.request("POST", "/0.1/users", { token: admin, body: { username: name, email_address: `${name}@x.org` } })
    ).json;
    let r = await t.request("POST", "/0.1/users", { token: siblingAdmin, body: { username: name.toUpperCase() } });
    expect([r.status, r.json.error_id, r.json.details.username.constraint_id]).toEqual([409, "conflict", "unique"]);
    r = await t.request("POST", "/0.1/users", { token: admin, body: { username: `${name}@X.org` } });
    expect([r.status, Object.keys(r.json.details)]).toEqual([409, ["username"]]);
    r = await t.request("POST", "/0.1/users", { token: admin, body: { email_address: name.toUpperCase() + "@x.org" } });
    expect([r.status, Object.keys(r.json.details)]).toEqual([409, ["email_address"]]);
    r = await t.request("POST", "/0.1/users", { token: admin, body: { uuid: u.uuid } });
    expect([r.status, Object.keys(r.json.details)]).toEqual([409, ["uuid"]]);
  });

  test("bad input answers 400 per field", async () => {
    const { t, admin } = await admins();
    const cases: Array<[unknown, string, string]> = [
      [{ username: "" }, "username", "length"],
      [{ username: "x".repeat(257) }, "username", "length"],
      [{ purpose: "robot" }, "purpose", "enum"],
      [{ email_address: "not-an-email" }, "email_address", "email"],
      [{ password: "" }, "password", "length"],
      [{ enabled: "maybe" }, "enabled", "type"],
      [{ authentication_method: "kerberos" }, "authentication_method", "enum"],
      [{ firstname: 3 }, "firstname", "type"],
    ];
    for (const [body, field, constraint] of cases) {
      const r = await t.request("POST", "/0.1/users", { token: admin, body });
      expect(r.status).toBe(400);
      expect(r.json.resource).toBe("users");
      expect(r.json.details[field].constraint_id).toBe(constraint);
    }
  });

  test("list: recurse, search, filters, order, paging, bad parameters", async () => {
    const { t, tenant, child, admin } = await admins();
    const p = uniq();
    for (const [n, f] of [
      ["carol", "Zed"],
      ["dave", "Amy"],
      ["erin", "Bea"],
    ])
      await t.request("POST", "/0.1/users", { token: admin, body: { username: `${n}${p}`, firstname: f } });
    await t.request("POST", "/0.1/users", { token: admin, tenant: child, body: { username: `frank${p}` } });
    let r = await t.request("GET", "/0.1/users", { token: admin });
    expect([r.json.total, r.json.filtered]).toEqual([4, 4]); // 3 + the admin fixture user
    r = await t.request("GET", "/0.1/users?recurse=true", { token: admin });
    expect(r.json.total).toBe(6);
    r = await t.request("GET", `/0.1/users?search=${p}&order=firstname&direction=desc&limit=2&offset=0`, {
      token: admin,
    });
    expect(r.json.items.map((u: { firstname: string }) => u.firstname)).toEqual(["Zed", "Bea"]);
    expect([r.json.filtered, r.json.total]).toEqual([3, 4]);
    r = await t.request("GET", `/0.1/users?username=dave${p}`, { token: admin });
    expect(r.json.items.map((u: { username: string }) => u.username)).toEqual([`dave${p}`]);
    r = await t.request("GET", "/0.1/users?order=password", { token: admin });
    expect([r.status, r.json.details.order.constraint_id]).toEqual([400, "enum"]);
    r = await t.request("GET", "/0.1/users?limit=abc", { token: admin });
    expect(r.status).toBe(400);
    expect(tenant).toBeTruthy();
  });

  test("replace (204), disable ends sessions, delete ends sessions (D11)", async () => {
    const { t, admin } = await admins();
    const name = `gus${uniq()}`;
    const u = (
      await t.request("POST", "/0.1/users", {
        token: admin,
        body: { username: name, firstname: "G", password: "pw", purpose: "user" },
      })
    ).json;
    const session = (await t.request("POST", "/0.1/token", { body: {}, headers: basic(name, "pw") })).json.data;
    let r = await t.request("PUT", `/0.1/users/${u.uuid}`, { token: admin, body: { username: name, lastname: "L" } });
    expect([r.status, r.text]).toEqual([204, ""]);
    const got = (await t.request("GET", `/0.1/users/${u.uuid}`, { token: admin })).json;
    expect([got.firstname, got.lastname]).toEqual([null, "L"]);
    expect((await t.request("HEAD", `/0.1/token/${session.token}`)).status).toBe(204);
    r = await t.request("PUT", `/0.1/users/${u.uuid}`, { token: admin, body: { username: name, enabled: false } });
    expect(r.status).toBe(204);
    expect((await t.request("HEAD", `/0.1/token/${session.token}`)).status).toBe(404);
    expect((await t.request("POST", "/0.1/token", { body: {}, headers: basic(name, "pw") })).status).toBe(401);
    await t.request("PUT", `/0.1/users/${u.uuid}`, { token: admin, body: { username: name } });
    const again = (await t.request("POST", "/0.1/token", { body: {}, headers: basic(name, "pw") })).json.data;
    expect((await t.request("DELETE", `/0.1/users/${u.uuid}`, { token: admin })).status).toBe(204);
    expect((await t.request("HEAD", `/0.1/token/${again.token}`)).status).toBe(404);
    expect((await t.request("GET", `/0.1/users/${u.uuid}`, { token: admin })).status).toBe(404);
    expect((await t.request("DELETE", `/0.1/users/${u.uuid}`, { token: admin })).status).toBe(204);
  });

  test("password change: old password checked, sessions end, 405 for external users", async () => {
    const { t, admin } = await admins();
    const name = `hal${uniq()}`;
    const u = (await t.request("POST", "/0.1/users", { token: admin, body: { username: name, password: "old" } })).json;
    const s = (await t.request("POST", "/0.1/token", { body: {}, headers: basic(name, "old") })).json.data;
    let r = await t.request("PUT", `/0.1/users/${u.uuid}/password`, {
      token: admin,
      body: { old_password: "bad", new_password: "new" },
    });
    expect([r.status, r.json.error_id]).toEqual([401, "authentication-failed"]);
    r = await t.request("PUT", `/0.1/users/${u.uuid}/password`, { token: admin, body: { new_password: "new" } });
    expect([r.status, r.json.details.old_password.constraint_id]).toEqual([400, "required"]);
    r = await t.request("PUT", `/0.1/users/${u.uuid}/password`, {
      token: admin,
      body: { old_password: "old", new_password: "new" },
    });
    expect(r.status).toBe(204);
    expect((await t.request("HEAD", `/0.1/token/${s.token}`)).status).toBe(404);
    expect((await t.request("POST", "/0.1/token", { body: {}, headers: basic(name, "new") })).status).toBe(200);
    await t.request("PUT", `/0.1/users/${u.uuid}`, {
      token: admin,
      body: { username: name, authentication_method: "native" },
    });
    const ext = (
      await t.request("POST", "/0.1/users", { token: admin, body: { username: `ext${uniq()}`, password: "pw" } })
    ).json;
    await t.app.db.update(users).set({ authenticationMethod: "ldap" }).where(eq(users.uuid, ext.uuid));
    r = await t.request("PUT", `/0.1/users/${ext.uuid}/password`, {
      token: admin,
      body: { old_password: "pw", new_password: "x" },
    });
    expect([r.status, r.json.error_id]).toEqual([405, "password-managed-externally"]);
  });

  test("isolation: sibling and child admins can neither read nor change; Wazo-Tenant lets the parent act in the child", async () => {
    const { t, child, admin, childAdmin, siblingAdmin } = await admins();
    const mine = (
      await t.request("POST", "/0.1/users", { token: admin, body: { username: `ivy${uniq()}`, password: "pw" } })
    ).json;
    for (const who of [siblingAdmin, childAdmin]) {
      expect((await t.request("GET", `/0.1/users/${mine.uuid}`, { token: who })).status).toBe(404);
      expect(
        (await t.request("PUT", `/0.1/users/${mine.uuid}`, { token: who, body: { username: "stolen" } })).status,
      ).toBe(404);
      expect(
        (
          await t.request("PUT", `/0.1/users/${mine.uuid}/password`, {
            token: who,
            body: { old_password: "pw", new_password: "x" },
          })
        ).status,
      ).toBe(404);
      expect((await t.request("DELETE", `/0.1/users/${mine.uuid}`, { token: who })).status).toBe(204);
      const list = await t.request("GET", "/0.1/users?recurse=true", { token: who });
      expect(list.json.items.map((u: { uuid: string }) => u.uuid)).not.toContain(mine.uuid);
    }
    expect((await t.request("GET", `/0.1/users/${mine.uuid}`, { token: admin })).json.username).toBe(mine.username);
    const inChild = await t.request("POST", "/0.1/users", {
      token: admin,
      tenant: child,
      body: { username: `jo${uniq()}` },
    });
    expect(inChild.json.tenant_uuid).toBe(child);
    expect((await t.request("POST", "/0.1/users", { token: siblingAdmin, tenant: child, body: {} })).status).toBe(401);
  });
});
