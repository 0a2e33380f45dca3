// A user whose authentication method is SAML signs in to an OpenID Connect client through the
// login page: its SAML button sends the browser through the tenant's SAML flow (a real test IdP,
// tests/helpers/saml-idp.ts), and the browser comes back signed in to the authorization request.
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as oidc from "openid-client";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken } from "../helpers/fixtures.ts";
import {
  discoverClient,
  hiddenFieldsOf,
  serveApp,
  startAuthorization,
  TestBrowser,
  type ServedApp,
} from "../helpers/oidc.ts";
import { startTestIdp, type TestIdp } from "../helpers/saml-idp.ts";
import { samlTenant, samlUser, type SamlTenant } from "../helpers/saml-tenant.ts";

const REDIRECT = "https://rp.example.com/callback";

describeEachDb("OpenID Connect sign-in of SAML users", (get) => {
  let served: ServedApp;
  let idp: TestIdp;
  let acme: SamlTenant;
  let alice: string;
  let configs: oidc.Configuration[];

  beforeAll(async () => {
    const t = get();
    served = serveApp(t);
    idp = await startTestIdp("acme");
    const admin = await adminToken(t.app);
    acme = await samlTenant(t, admin, idp, "acme");
    alice = await samlUser(t, admin, idp, acme.tenant, "alice");
    configs = [];
    for (const name of ["Grafana", "Wiki"]) {
      const r = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        tenant: acme.tenant,
        body: { name, client_type: "confidential", redirect_uris: [REDIRECT], first_party: true },
      });
      configs.push(await discoverClient(new URL(`${served.url}/0.1/oidc`), r.json));
    }
  });
  afterAll(async () => {
    await idp?.stop();
    await served?.stop();
  });

  const start = (config: oidc.Configuration, extra: Record<string, string> = {}) =>
    startAuthorization(config, REDIRECT, extra);

  /** The browser posting the IdP's form to the ACS: where the ACS sends it next. */
  async function postAcs(post: { action: string; SAMLResponse: string; RelayState: string }): Promise<string> {
    const r = await fetch(`${served.url}${new URL(post.action).pathname}`, {
      method: "POST",
      redirect: "manual",
      body: new URLSearchParams({ SAMLResponse: post.SAMLResponse, RelayState: post.RelayState }),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(r.status).toBe(302);
    return r.headers.get("location")!;
  }

  /** The login page, then its SAML button: the IdP's URL. */
  async function toIdp(browser: TestBrowser, url: string) {
    const shown = await browser.get(url);
    expect(shown.res.status).toBe(200);
    expect(shown.html).toContain(`Sign in with ${acme.domain} single sign-on`);
    // The form may lead to the IdP (CSP form-action), and nowhere else but the client.
    expect(shown.res.headers.get("content-security-policy")).toContain(`${idp.url}/sso`);
    const started = await browser.post("/0.1/oidc/authorize/saml", hiddenFieldsOf(shown.html));
    expect(started.res.status).toBe(303);
    return started.location!.toString();
  }

  test("the SAML button → IdP → ACS → back signed in: a code for the SAML user (amr saml), then single sign-on for another client", async () => {
    const browser = new TestBrowser(served.url);
    const flow = await start(configs[0]!);
    const location = await toIdp(browser, flow.url);
    expect(location.startsWith(`${idp.url}/sso`)).toBe(true);
    const back = await postAcs(await idp.browserLogin(location, "alice", "alice-idp-pw"));
    expect(back.startsWith(`${served.url}/0.1/oidc/authorize/saml?`)).toBe(true);
    const done = await browser.get(back);
    expect(done.res.status).toBe(303);
    const tokens = await oidc.authorizationCodeGrant(configs[0]!, done.location!, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce, // through the SAML round trip
    });
    expect(tokens.claims()).toMatchObject({ sub: alice, amr: ["saml"], tenant_uuid: acme.tenant });
    const sso = await start(configs[1]!, { prompt: "none" });
    const silent = await browser.get(sso.url);
    expect(silent.location!.searchParams.get("code")).toBeTruthy();
    const second = await oidc.authorizationCodeGrant(configs[1]!, silent.location!, {
      pkceCodeVerifier: sso.verifier,
      expectedState: sso.state,
      expectedNonce: sso.nonce,
    });
    expect(second.claims()!.sub).toBe(alice);
  });

  test("the return URL in another browser (no SAML cookie), a refused SAML response, or the native password: no code", async () => {
    const browser = new TestBrowser(served.url);
    const flow = await start(configs[0]!);
    const back = await postAcs(await idp.browserLogin(await toIdp(browser, flow.url), "alice", "alice-idp-pw"));
    const thief = new TestBrowser(served.url);
    const stolen = await thief.get(back);
    expect(stolen.res.status).toBe(401);
    expect(stolen.location).toBeNull();
    expect(stolen.html).toContain("Single sign-on did not succeed");
    // The IdP's answer refused by the ACS (unsigned): back with login_failure_code, the form again.
    const second = new TestBrowser(served.url);
    const location = await toIdp(second, (await start(configs[0]!)).url);
    idp.next = { sign: "none" };
    const refused = await postAcs(await idp.browserLogin(location, "alice", "alice-idp-pw"));
    expect(refused).toContain("login_failure_code=500");
    const page = await second.get(refused);
    expect(page.res.status).toBe(401);
    expect(page.location).toBeNull();
    // A SAML user's Tessera password does not sign in on the form (authentication-method rule).
    const third = new TestBrowser(served.url);
    const form = await third.signIn((await start(configs[0]!)).url, "alice", "native-pw");
    expect(form.res.status).toBe(401);
    expect(form.html).toContain("Wrong username or password.");
  });
});
