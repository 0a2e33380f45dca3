import { afterAll, beforeAll, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken, tokenFor } from "../helpers/fixtures.ts";
import { startTestIdp, type TestIdp } from "../helpers/saml-idp.ts";
import {
  APP_URL,
  fullLogin,
  metadataFile,
  postAcs,
  samlTenant,
  samlUser,
  sendForm,
  type SamlTenant,
} from "../helpers/saml-tenant.ts";

describeEachDb("SAML configuration per tenant", (get) => {
  let acmeIdp: TestIdp;
  let globexIdp: TestIdp;
  let admin: string;
  let acme: SamlTenant;
  let globex: SamlTenant;
  beforeAll(async () => {
    const t = get();
    acmeIdp = await startTestIdp("acme");
    globexIdp = await startTestIdp("globex");
    admin = await adminToken(t.app);
    acme = await samlTenant(t, admin, acmeIdp, "acme");
    globex = await samlTenant(t, admin, globexIdp, "globex");
  });
  afterAll(async () => {
    await acmeIdp?.stop();
    await globexIdp?.stop();
  });

  test("GET returns the tenant's configuration; the metadata comes back as an XML attachment; the ACS template", async () => {
    const t = get();
    const r = await t.request("GET", "/0.1/backends/saml", { token: admin, tenant: acme.tenant });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      tenant_uuid: acme.tenant,
      domain_uuid: acme.domainUuid,
      entity_id: acme.entityId,
      acs_url: acme.acsUrl,
    });
    const md = await t.request("GET", "/0.1/backends/saml/metadata", { token: admin, tenant: acme.tenant });
    expect(md.status).toBe(200);
    expect(md.headers.get("Content-Type")).toContain("application/xml");
    expect(md.headers.get("Content-Disposition")).toContain("attachment");
    expect(md.text).toBe(acmeIdp.metadata());
    const sp = await t.request("GET", "/0.1/backends/saml/sp_metadata", { token: admin, tenant: acme.tenant });
    expect(sp.text).toContain(`entityID="${acme.entityId}"`);
    expect(sp.text).toContain(`Location="${acme.acsUrl}"`);
    expect(sp.text).toContain('AuthnRequestsSigned="true"');
    const tpl = await t.request("GET", "/0.1/backends/saml/acs_url_template", { token: admin });
    expect(tpl.json).toEqual({ acs_url: "https://{{STACK_URL}}/api/auth/0.1/saml/acs" });
    expect((await t.request("GET", "/0.1/backends/saml", { token: admin })).status).toBe(404); // master has none
  });

  test("two tenants, two IdPs: each logs in its own users; neither IdP speaks for the other tenant", async () => {
    const t = get();
    const alice = await samlUser(t, admin, acmeIdp, acme.tenant, "alice");
    const bob = await samlUser(t, admin, globexIdp, globex.tenant, "bob");
    expect((await fullLogin(t, acmeIdp, acme.domain, "alice")).token.json.data.auth_id).toBe(alice);
    expect((await fullLogin(t, globexIdp, globex.domain, "bob")).token.json.data.auth_id).toBe(bob);
    // globex's IdP (its administrator controls it) asserts acme's alice: no token
    globexIdp.users.set("mallory", { password: "m", login: "alice" });
    const forged = await fullLogin(t, globexIdp, globex.domain, "mallory");
    expect(forged.acs.headers.get("Location")).toBe(APP_URL);
    expect(forged.token.status).toBe(401);
    // acme's login started, globex's IdP answers it (for alice): wrong issuer and certificate
    const sso = await t.request("POST", "/0.1/saml/sso", { body: { redirect_url: APP_URL, domain: acme.domain } });
    const location = new URL(sso.json.location);
    const post = await globexIdp.browserLogin(`${globexIdp.url}/sso${location.search}`, "mallory", "m");
    const acs = await postAcs(t, { ...post, RelayState: location.searchParams.get("RelayState")! });
    expect(acs.headers.get("Location")).toBe(`${APP_URL}?login_failure_code=500`);
    expect(
      (await t.request("POST", "/0.1/token", { body: { saml_session_id: sso.json.saml_session_id } })).status,
    ).toBe(401);
  });

  test("isolation: siblings and children see and change nothing of another tenant's configuration; a parent acts in a child", async () => {
    const t = get();
    const child = (
      await t.request("POST", "/0.1/tenants", {
        token: admin,
        tenant: acme.tenant,
        body: { name: "acme-child", domain_names: ["child.acme.example.com"] },
      })
    ).json.uuid;
    const acmeAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: acme.tenant })).token;
    const globexAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: globex.tenant })).token;
    const childAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: child })).token;
    for (const method of ["GET", "DELETE"]) {
      expect((await t.request(method, "/0.1/backends/saml", { token: globexAdmin, tenant: acme.tenant })).status).toBe(
        401,
      );
      expect((await t.request(method, "/0.1/backends/saml", { token: childAdmin, tenant: acme.tenant })).status).toBe(
        401,
      );
    }
    expect(
      (await t.request("GET", "/0.1/backends/saml/metadata", { token: globexAdmin, tenant: acme.tenant })).status,
    ).toBe(401);
    expect(
      (await sendForm(t, "PUT", "/0.1/backends/saml", { entity_id: "x" }, { token: globexAdmin, tenant: acme.tenant }))
        .status,
    ).toBe(401);
    // globex's own view is its own configuration; the child has none
    expect((await t.request("GET", "/0.1/backends/saml", { token: globexAdmin })).json.tenant_uuid).toBe(globex.tenant);
    expect((await t.request("GET", "/0.1/backends/saml", { token: childAdmin })).status).toBe(404);
    // a domain of another tenant cannot be used
    const theirs = await sendForm(
      t,
      "PUT",
      "/0.1/backends/saml",
      { domain_uuid: acme.domainUuid },
      { token: globexAdmin },
    );
    expect(theirs.status).toBe(400);
    expect(theirs.json.details.domain_uuid.constraint_id).toBe("tenant_domain");
    expect((await t.request("GET", "/0.1/backends/saml", { token: acmeAdmin })).json.entity_id).toBe(acme.entityId);
    // the parent configures its child through Wazo-Tenant
    const childDomain = (await t.request("GET", `/0.1/tenants/${child}/domains`, { token: acmeAdmin })).json.items[0]
      .uuid;
    const created = await sendForm(
      t,
      "POST",
      "/0.1/backends/saml",
      {
        domain_uuid: childDomain,
        entity_id: "https://child/sp",
        acs_url: "https://child.tessera.test/0.1/saml/acs",
        metadata: metadataFile(acmeIdp.metadata()),
      },
      { token: acmeAdmin, tenant: child },
    );
    expect(created.status).toBe(200);
    expect(created.json.tenant_uuid).toBe(child);
    expect((await t.request("GET", "/0.1/backends/saml", { token: childAdmin })).json.entity_id).toBe(
      "https://child/sp",
    );
    expect((await t.request("DELETE", "/0.1/backends/saml", { token: acmeAdmin, tenant: child })).status).toBe(204);
    expect((await t.request("GET", "/0.1/backends/saml", { token: acmeAdmin })).status).toBe(200);
    // ACL per operation
    const reader = (await tokenFor(t.app, { acl: ["auth.backends.saml.read"], tenantUuid: acme.tenant })).token;
    expect((await t.request("GET", "/0.1/backends/saml", { token: reader })).status).toBe(200);
    expect((await t.request("DELETE", "/0.1/backends/saml", { token: reader })).status).toBe(403);
  });

  test("validation: one error body with every bad field; conflicts; PUT 204; DELETE of nothing 204; changes apply at once", async () => {
    const t = get();
    const tenant = (
      await t.request("POST", "/0.1/tenants", {
        token: admin,
        body: { name: "initech", domain_names: ["initech.example.com"] },
      })
    ).json.uuid;
    const domainUuid = (await t.request("GET", `/0.1/tenants/${tenant}/domains`, { token: admin })).json.items[0].uuid;
    const empty = await sendForm(t, "POST", "/0.1/backends/saml", {}, { token: admin, tenant });
    expect(empty.status).toBe(400);
    expect(empty.json).toMatchObject({ error_id: "invalid-data", resource: "saml_config" });
    expect(Object.keys(empty.json.details).sort()).toEqual(["acs_url", "domain_uuid", "entity_id", "metadata"]);
    const json = await t.request("POST", "/0.1/backends/saml", { token: admin, tenant, body: { entity_id: "x" } });
    expect(json.status).toBe(400);
    const base = {
      domain_uuid: domainUuid,
      entity_id: "https://initech/sp",
      acs_url: "https://initech.tessera.test/0.1/saml/acs",
    };
    for (const [xml, why] of [
      ["<not xml", "Invalid IdP metadata"],
      ["<EntityDescriptor xmlns='urn:oasis:names:tc:SAML:2.0:metadata' entityID='x'/>", "IDPSSODescriptor"],
      ["  ", "Empty"],
    ] as const) {
      const r = await sendForm(
        t,
        "POST",
        "/0.1/backends/saml",
        { ...base, metadata: metadataFile(xml) },
        { token: admin, tenant },
      );
      expect(r.status).toBe(400);
      expect(r.json.details.metadata.message).toContain(why);
    }
    const badUrl = await sendForm(
      t,
      "POST",
      "/0.1/backends/saml",
      { ...base, acs_url: "javascript:alert(1)", metadata: metadataFile(acmeIdp.metadata()) },
      { token: admin, tenant },
    );
    expect(badUrl.json.details.acs_url).toBeDefined();
    expect((await t.request("GET", "/0.1/backends/saml", { token: admin, tenant })).status).toBe(404); // nothing written
    expect(
      (
        await sendForm(
          t,
          "POST",
          "/0.1/backends/saml",
          { ...base, metadata: metadataFile(acmeIdp.metadata()) },
          { token: admin, tenant },
        )
      ).status,
    ).toBe(200);
    const again = await sendForm(
      t,
      "POST",
      "/0.1/backends/saml",
      { ...base, metadata: metadataFile(acmeIdp.metadata()) },
      { token: admin, tenant },
    );
    expect(again.status).toBe(409);
    expect(again.json.details.tenant_uuid.constraint_id).toBe("unique");
    expect(
      (await sendForm(t, "PUT", "/0.1/backends/saml", { entity_id: "https://initech/sp2" }, { token: admin, tenant }))
        .status,
    ).toBe(204);
    expect((await t.request("GET", "/0.1/backends/saml", { token: admin, tenant })).json.entity_id).toBe(
      "https://initech/sp2",
    );
    expect(
      (await t.request("POST", "/0.1/saml/sso", { body: { redirect_url: APP_URL, domain: "initech.example.com" } }))
        .status,
    ).toBe(200);
    expect((await t.request("DELETE", "/0.1/backends/saml", { token: admin, tenant })).status).toBe(204);
    expect((await t.request("DELETE", "/0.1/backends/saml", { token: admin, tenant })).status).toBe(204);
    const gone = await t.request("POST", "/0.1/saml/sso", {
      body: { redirect_url: APP_URL, domain: "initech.example.com" },
    });
    expect(gone.status).toBe(404);
    expect((await t.request("GET", "/0.1/backends/saml/metadata", { token: admin, tenant })).status).toBe(404);
  });

  test("POST /saml/sso validates its body and refuses redirect URLs that are not absolute http(s)", async () => {
    const t = get();
    for (const redirect_url of [
      "javascript:alert(1)",
      "/relative",
      "//evil.example.com/x",
      "https://user:pw@app.example.com/",
    ]) {
      const r = await t.request("POST", "/0.1/saml/sso", { body: { redirect_url, domain: acme.domain } });
      expect(r.status).toBe(400);
      expect(r.json.details.redirect_url.constraint_id).toBe("redirect_url");
    }
    const bad = await t.request("POST", "/0.1/saml/sso", { body: { redirect_url: APP_URL, domain: "not a domain" } });
    expect(bad.json.details.domain).toBeDefined();
    expect(
      (await t.request("POST", "/0.1/saml/sso", { body: { redirect_url: APP_URL, domain: "unknown.example.com" } }))
        .status,
    ).toBe(404);
  });
});

describeEachDb(
  "SAML redirect origins allow-list",
  (get) => {
    test("with saml.allowed_redirect_origins, other origins are refused before any IdP lookup", async () => {
      const t = get();
      const r = await t.request("POST", "/0.1/saml/sso", {
        body: { redirect_url: "https://evil.example.com/", domain: "acme.example.com" },
      });
      expect(r.status).toBe(400);
      expect(r.json.details.redirect_url.constraint).toEqual(["https://app.example.com"]);
      expect(
        (
          await t.request("POST", "/0.1/saml/sso", {
            body: { redirect_url: `${APP_URL}?x=1`, domain: "acme.example.com" },
          })
        ).status,
      ).toBe(404);
    });
  },
  { config: { saml: { allowed_redirect_origins: ["https://app.example.com"] } } },
);
