import { afterAll, beforeAll, expect, test } from "bun:test";
import { createApp } from "../../src/app.ts";
import type { AppContext } from "../../src/boot/context.ts";
import { buildContext } from "../../src/services/app-context.ts";
import { startServices } from "../../src/boot/startup.ts";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken } from "../helpers/fixtures.ts";
import { startTestIdp, type TestIdp } from "../helpers/saml-idp.ts";
import { APP_URL, fullLogin, samlTenant, type SamlTenant } from "../helpers/saml-tenant.ts";

describeEachDb("SAML across instances and authentication methods", (get) => {
  let idp: TestIdp;
  let admin: string;
  let acme: SamlTenant;
  let second: AppContext;
  beforeAll(async () => {
    const t = get();
    idp = await startTestIdp("acme");
    admin = await adminToken(t.app);
    acme = await samlTenant(t, admin, idp, "acme");
    // A second instance on the same database: its own caches, nothing shared in memory.
    second = await buildContext(t.app.config, t.app.database, t.app.log);
    await startServices(second);
  });
  afterAll(async () => {
    // The suite's database may already be closed (its afterAll runs first): the listeners went with it.
    for (const hook of [...(second?.onClose ?? [])].reverse())
      await Promise.resolve()
        .then(hook)
        .catch(() => {});
    await idp?.stop();
  });

  const on = (app: AppContext) => {
    const http = createApp(app);
    return (method: string, path: string, body?: string, headers: Record<string, string> = {}) =>
      http.request(path, { method, body, headers }, { remoteAddr: "127.0.0.1" });
  };

  test("the login starts on one instance, the IdP posts to another, the token comes from either; logout from the first", async () => {
    const t = get();
    const user = await t.request("POST", "/0.1/users", {
      token: admin,
      tenant: acme.tenant,
      body: { username: "dora", authentication_method: "saml" },
    });
    expect(user.status).toBe(200);
    idp.users.set("dora", { password: "d", login: "dora" });
    const sso = await t.request("POST", "/0.1/saml/sso", { body: { redirect_url: APP_URL, domain: acme.domain } });
    const post = await idp.browserLogin(sso.json.location, "dora", "d");
    const other = on(second);
    const acs = await other(
      "POST",
      "/0.1/saml/acs",
      new URLSearchParams({ SAMLResponse: post.SAMLResponse, RelayState: post.RelayState }).toString(),
      { "Content-Type": "application/x-www-form-urlencoded" },
    );
    expect(acs.status).toBe(302);
    expect(acs.headers.get("Location")).toBe(APP_URL);
    const token = await other("POST", "/0.1/token", JSON.stringify({ saml_session_id: sso.json.saml_session_id }));
    expect(token.status).toBe(200);
    const tok = ((await token.json()) as { data: { token: string; auth_id: string } }).data;
    expect(tok.auth_id).toBe(user.json.uuid);
    const logout = await t.request("GET", "/0.1/saml/logout", { token: tok.token });
    expect(logout.status).toBe(200);
    expect((await other("GET", `/0.1/token/${tok.token}`)).status).toBe(404);
  });

  test("a tenant whose default method is saml: its `default` users log in through the IdP, and not with a password", async () => {
    const t = get();
    const tenant = await t.request("GET", `/0.1/tenants/${acme.tenant}`, { token: admin });
    const put = await t.request("PUT", `/0.1/tenants/${acme.tenant}`, {
      token: admin,
      body: { name: tenant.json.name, domain_names: tenant.json.domain_names, default_authentication_method: "saml" },
    });
    expect(put.status).toBe(204);
    const erin = await t.request("POST", "/0.1/users", {
      token: admin,
      tenant: acme.tenant,
      body: { username: "erin", password: "pw" },
    });
    expect(erin.json.authentication_method).toBe("default");
    idp.users.set("erin", { password: "e", login: "erin" });
    const { token } = await fullLogin(t, idp, acme.domain, "erin");
    expect(token.status).toBe(200);
    expect(token.json.data.auth_id).toBe(erin.json.uuid);
    expect(
      (await t.request("POST", "/0.1/token", { body: {}, headers: { Authorization: `Basic ${btoa("erin:pw")}` } }))
        .status,
    ).toBe(401);
    const bad = await t.request("POST", "/0.1/users", {
      token: admin,
      tenant: acme.tenant,
      body: { username: "frank", authentication_method: "kerberos" },
    });
    expect(bad.status).toBe(400);
  });
});
