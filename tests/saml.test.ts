import { afterAll, beforeAll, expect, test } from "bun:test";
import { describeEachDb } from "./helpers/app.ts";
import { adminToken } from "./helpers/fixtures.ts";
import { startTestIdp, type TestIdp } from "./helpers/saml-idp.ts";
import { APP_URL, fullLogin, samlTenant, samlUser, type SamlTenant } from "./helpers/saml-tenant.ts";

describeEachDb("SAML login through a real identity provider", (get) => {
  let idp: TestIdp;
  let admin: string;
  let acme: SamlTenant;
  let alice: string;
  beforeAll(async () => {
    const t = get();
    idp = await startTestIdp("acme");
    admin = await adminToken(t.app);
    acme = await samlTenant(t, admin, idp, "acme");
    alice = await samlUser(t, admin, idp, acme.tenant, "alice");
  });
  afterAll(async () => idp?.stop());

  test("SSO redirect → IdP login → signed response to the ACS → token for the user the assertion names", async () => {
    const t = get();
    const { acs, token } = await fullLogin(t, idp, acme.domain, "alice");
    expect(acs.status).toBe(302);
    expect(acs.headers.get("Location")).toBe(APP_URL);
    expect(token.status).toBe(200);
    expect(token.json.data.auth_id).toBe(alice);
    expect(token.json.data.metadata.tenant_uuid).toBe(acme.tenant);
  });
});
