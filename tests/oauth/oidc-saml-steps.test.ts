// After the SAML return (GET /0.1/oidc/authorize/saml, a nested path) the sign-in goes on through
// the provider's pages as after a password: the consent page of a third-party client, the second
// factor of a user with TOTP. Each page's form is posted as a browser posts it: its action resolved
// against the page's own URL. The ID token says how the user authenticated (RFC 8176 §2): `saml`,
// then `otp mfa` after the second factor (never `pwd`).
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as oidc from "openid-client";
import { eq } from "drizzle-orm";
import { mfaTotp } from "../../src/db/schema.ts";
import { MFA_SELF_SERVICE_ACL } from "../../src/services/auth/mfa-policy.ts";
import { currentCode } from "../../src/services/auth/totp.ts";
import { relativeBase, renderPage } from "../../src/web/pages/oidc-login.ts";
import { createTestApp, describeEachDb } from "../helpers/app.ts";
import { adminToken, tokenFor } from "../helpers/fixtures.ts";
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

/** The action of the page's first form, resolved as a browser resolves it: against the page's URL. */
function formTarget(html: string, pageUrl: string): URL {
  const action = /<form method="post" action="([^"]*)"/.exec(html)?.[1];
  if (action === undefined) throw new Error(`no form: ${html.slice(0, 300)}`);
  return new URL(action.replaceAll("&amp;", "&"), pageUrl);
}

test("every target of a page lands under the issuer whatever path rendered it, behind a prefix too", async () => {
  expect(relativeBase("/0.1/oidc/authorize")).toBe("");
  expect(relativeBase("/0.1/oidc/authorize/saml")).toBe("../");
  expect(relativeBase("/0.1/oidc/upstream/u-1/callback")).toBe("../../");
  expect(relativeBase("/health")).toBe("");
  const t = await createTestApp("pglite", { config: { public_url: "https://auth.example.com/api/auth" } });
  try {
    const issuer = "https://auth.example.com/api/auth/0.1/oidc";
    for (const [path, depth] of [
      ["authorize", 0],
      ["authorize/saml", 1],
      ["upstream/u-1/callback", 2],
    ] as const) {
      // The browser sees the prefix (`public_url`, `X-Script-Name`); the service is asked the path without it.
      const pageUrl = `${issuer}/${path}`;
      const render = async (page: Parameters<typeof renderPage>[1]) =>
        (await renderPage(t.app, page, 200, { path: `/0.1/oidc/${path}` }).text()).replaceAll("&amp;", "&");
      const targets = (html: string) =>
        [...html.matchAll(/(?:action|src|href|data-options)="([^"]+)"/g)].map((m) => new URL(m[1]!, pageUrl).href);
      const login = await render({
        step: "login",
        clientName: "RP",
        hidden: {},
        samlDomain: "acme",
        passkeySignIn: true,
      });
      expect(targets(login).sort()).toEqual(
        [
          `${issuer}/assets/passkey.js`,
          `${issuer}/assets/webauthn-browser.js`,
          `${issuer}/authorize`,
          `${issuer}/authorize/saml`,
          `${issuer}/passkey-options`,
          `${issuer}/passkey-sign-in`,
        ].sort(),
      );
      const consent = await render({ step: "consent", clientName: "RP", userName: "a", scopes: [], hidden: {} });
      expect(targets(consent)).toEqual([`${issuer}/authorize/consent`]);
      const step = await render({
        step: "mfa",
        title: "Two-step verification",
        mode: "verify",
        action: "authorize-mfa",
        optionsAction: "passkey-options",
        hidden: {},
        hasCode: true,
        hasPasskey: true,
      });
      expect(new Set(targets(step))).toEqual(
        new Set([
          `${issuer}/assets/passkey.js`,
          `${issuer}/assets/webauthn-browser.js`,
          `${issuer}/authorize-mfa`,
          `${issuer}/passkey-options`,
        ]),
      );
      expect(relativeBase(`/0.1/oidc/${path}`)).toBe("../".repeat(depth));
    }
  } finally {
    await t.close();
  }
});

describeEachDb(
  "SAML sign-in, then consent or the second factor",
  (get) => {
    let served: ServedApp;
    let idp: TestIdp;
    let acme: SamlTenant;
    let alice: string;
    let bob: string;
    let bobSecret: string;
    let partner: oidc.Configuration;
    let firstParty: oidc.Configuration;
    /** A third-party client bob has not consented to yet. */
    let other: oidc.Configuration;
    /** A tenant requiring MFA, with its own IdP, and a first-party client of it. */
    let strictIdp: TestIdp;
    let strict: SamlTenant;
    let strictClient: oidc.Configuration;

    beforeAll(async () => {
      const t = get();
      served = serveApp(t);
      idp = await startTestIdp("acme");
      const admin = await adminToken(t.app);
      acme = await samlTenant(t, admin, idp, "acme");
      alice = await samlUser(t, admin, idp, acme.tenant, "alice");
      bob = await samlUser(t, admin, idp, acme.tenant, "bob");
      bobSecret = await enrolTotp(bob, acme.tenant);
      const client = async (name: string, firstPartyClient: boolean) => {
        const r = await t.request("POST", "/0.1/oidc/clients", {
          token: admin,
          tenant: acme.tenant,
          body: { name, client_type: "confidential", redirect_uris: [REDIRECT], first_party: firstPartyClient },
        });
        return discoverClient(new URL(`${served.url}/0.1/oidc`), r.json);
      };
      partner = await client("Partner", false);
      firstParty = await client("Grafana", true);
      other = await client("Other", false);
      strictIdp = await startTestIdp("strict");
      strict = await samlTenant(t, admin, strictIdp, "strict");
      expect(
        (await t.request("PUT", `/0.1/tenants/${strict.tenant}/mfa`, { token: admin, body: { mfa: "required" } }))
          .status,
      ).toBe(204);
      const r = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        tenant: strict.tenant,
        body: { name: "Strict", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true },
      });
      strictClient = await discoverClient(new URL(`${served.url}/0.1/oidc`), r.json);
    });
    afterAll(async () => {
      await idp?.stop();
      await strictIdp?.stop();
      await served?.stop();
    });

    /** TOTP enrolled through the API for `user`: its secret. */
    async function enrolTotp(user: string, tenant: string): Promise<string> {
      const t = get();
      const own = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: user, tenantUuid: tenant })).token;
      const started = await t.request("POST", "/0.1/users/me/mfa/totp", { token: own });
      expect(started.status).toBeLessThan(300);
      const secret = started.json.secret as string;
      const confirmed = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
        token: own,
        // The previous step's code (within the window): each later code is then a newer step (RFC 6238 §5.2).
        body: { code: currentCode(secret, Date.now() - 30_000) },
      });
      expect(confirmed.status).toBeLessThan(300);
      return secret;
    }

    /** Login page → SAML button → IdP → ACS: the page of the SAML return, and its URL. */
    async function samlReturn(browser: TestBrowser, url: string, user: string, via: TestIdp = idp) {
      const shown = await browser.get(url);
      expect(shown.res.status).toBe(200);
      const started = await browser.post("/0.1/oidc/authorize/saml", hiddenFieldsOf(shown.html));
      expect(started.res.status).toBe(303);
      const post = await via.browserLogin(started.location!.toString(), user, `${user}-idp-pw`);
      const acs = await fetch(`${served.url}${new URL(post.action).pathname}`, {
        method: "POST",
        redirect: "manual",
        body: new URLSearchParams({ SAMLResponse: post.SAMLResponse, RelayState: post.RelayState }),
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
      });
      expect(acs.status).toBe(302);
      const back = acs.headers.get("location")!;
      expect(back.startsWith(`${served.url}/0.1/oidc/authorize/saml?`)).toBe(true);
      return { url: back, ...(await browser.get(back)) };
    }

    /**
     * An administrator's new password for `user`, to be changed at its next password sign-in: set while the
     * user is native (a SAML user's password is its IdP's: 405), before it went back to SAML.
     */
    async function mustChangePassword(user: string, tenant: string) {
      const t = get();
      const admin = await adminToken(t.app);
      expect((await t.request("DELETE", `/0.1/idp/saml/users/${user}`, { token: admin, tenant })).status).toBe(204);
      const r = await t.request("POST", `/0.1/users/password/reset?user_uuid=${user}`, {
        token: admin,
        tenant,
        body: { password: "temporary-pw", must_change: true },
      });
      expect(r.status).toBeLessThan(300);
      expect((await t.request("PUT", `/0.1/idp/saml/users/${user}`, { token: admin, tenant })).status).toBe(204);
    }

    /** The code of the redirect exchanged: the ID token's claims, and the ACL of the access token. */
    async function redeemed(
      client: oidc.Configuration,
      location: URL,
      flow: Awaited<ReturnType<typeof startAuthorization>>,
    ) {
      const tokens = await oidc.authorizationCodeGrant(client, location, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
      });
      const read = await get().request("GET", `/0.1/token/${tokens.access_token}`);
      expect(read.status).toBe(200);
      return { claims: tokens.claims(), acl: read.json.data.acl as string[] };
    }

    /** Posts the page's first form where a browser would (its action against the page's URL). */
    async function submit(browser: TestBrowser, html: string, pageUrl: string, fields: Record<string, string>) {
      const target = formTarget(html, pageUrl);
      expect(target.origin).toBe(served.url);
      expect(target.pathname.startsWith("/0.1/oidc/")).toBe(true);
      const answer = await browser.post(`${target.pathname}${target.search}`, { ...hiddenFieldsOf(html), ...fields });
      return { url: target.toString(), ...answer };
    }

    test("a third-party client: the consent page after the SAML return posts to the consent endpoint; amr saml", async () => {
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(partner, REDIRECT);
      const consent = await samlReturn(browser, flow.url, "alice");
      expect(consent.res.status).toBe(200);
      expect(formTarget(consent.html, consent.url).pathname).toBe("/0.1/oidc/authorize/consent");
      const done = await submit(browser, consent.html, consent.url, { decision: "allow" });
      expect(done.res.status).toBe(303);
      expect(done.location!.toString().startsWith(REDIRECT)).toBe(true);
      const tokens = await oidc.authorizationCodeGrant(partner, done.location!, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
      });
      expect(tokens.claims()).toMatchObject({ sub: alice, amr: ["saml"] });
    });

    test("a refused SAML return shows the login page at the nested path: its every target under the issuer", async () => {
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(firstParty, REDIRECT);
      idp.next = { sign: "none" };
      const page = await samlReturn(browser, flow.url, "alice");
      expect(page.res.status).toBe(401);
      // The language switcher's links reload this very page in another language (docs/languages.md).
      const html = page.html.replace(/<nav class="languages"[\s\S]*?<\/nav>/, "");
      const targets = [...html.matchAll(/(?:action|src|href)="([^"]+)"/g)].map(
        (m) => new URL(m[1]!.replaceAll("&amp;", "&"), page.url).pathname,
      );
      expect(targets.sort()).toEqual(["/0.1/oidc/authorize", "/0.1/oidc/authorize/saml"]);
      // The password form, posted where a browser posts it: the form again (a SAML user's password is refused there).
      const again = await submit(browser, page.html, page.url, { username: "alice", password: "native-pw" });
      expect(again.res.status).toBe(401);
      expect(again.html).toContain('name="password"');
    });

    test("a user with TOTP: the second step after the SAML return, then the code; amr saml otp mfa", async () => {
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(firstParty, REDIRECT);
      const step = await samlReturn(browser, flow.url, "bob");
      expect(step.res.status).toBe(200);
      expect(step.html).toContain('name="pending"');
      expect(formTarget(step.html, step.url).pathname).toBe("/0.1/oidc/authorize-mfa");
      const done = await submit(browser, step.html, step.url, { code: currentCode(bobSecret) });
      expect(done.res.status).toBe(303);
      const tokens = await oidc.authorizationCodeGrant(firstParty, done.location!, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
      });
      expect(tokens.claims()).toMatchObject({ sub: bob, amr: ["saml", "otp", "mfa"] });
      // The browser session keeps the factors: single sign-on for the third-party client says the same.
      const sso = await startAuthorization(partner, REDIRECT);
      const consent = await browser.get(sso.url);
      expect(consent.res.status).toBe(200);
      const allowed = await submit(browser, consent.html, sso.url, { decision: "allow" });
      expect(allowed.res.status).toBe(303);
      const second = await oidc.authorizationCodeGrant(partner, allowed.location!, {
        pkceCodeVerifier: sso.verifier,
        expectedState: sso.state,
        expectedNonce: sso.nonce,
      });
      expect(second.claims()).toMatchObject({ sub: bob, amr: ["saml", "otp", "mfa"] });
    });

    test("a user with TOTP and a third-party client: SAML, the second step, then consent", async () => {
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(other, REDIRECT);
      const step = await samlReturn(browser, flow.url, "bob");
      expect(step.res.status).toBe(200);
      // The next step's code (within the window): the previous test spent the current one (no replay).
      const consent = await submit(browser, step.html, step.url, { code: currentCode(bobSecret, Date.now() + 30_000) });
      expect(consent.res.status).toBe(200);
      const done = await submit(browser, consent.html, consent.url, { decision: "allow" });
      expect(done.res.status).toBe(303);
      const tokens = await oidc.authorizationCodeGrant(other, done.location!, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
      });
      expect(tokens.claims()).toMatchObject({ sub: bob, amr: ["saml", "otp", "mfa"] });
    });

    test("a tenant requiring MFA, a user with none: SAML, then the enrolment, then a whole token; amr saml otp mfa", async () => {
      const t = get();
      const carol = await samlUser(t, await adminToken(t.app), strictIdp, strict.tenant, "carol");
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(strictClient, REDIRECT);
      const enrol = await samlReturn(browser, flow.url, "carol", strictIdp);
      // The enrolment page, as after a password (not an enrol-only token handed to the client).
      expect(enrol.res.status).toBe(200);
      expect(enrol.html).toContain('name="step" value="confirm"');
      const secret = /class="secret">([^<]+)</.exec(enrol.html)?.[1]?.trim();
      expect(secret).toBeTruthy();
      const codes = await submit(browser, enrol.html, enrol.url, { code: currentCode(secret!) });
      expect(codes.res.status).toBe(200);
      expect(codes.html).toContain('name="step" value="finish"');
      const done = await submit(browser, codes.html, codes.url, {});
      expect(done.res.status).toBe(303);
      const { claims, acl } = await redeemed(strictClient, done.location!, flow);
      expect(claims).toMatchObject({ sub: carol, amr: ["saml", "otp", "mfa"] });
      expect(acl).toContain(MFA_SELF_SERVICE_ACL);
      // Enrolled on the page (a confirmed TOTP), not handed an enrol-only token.
      const [row] = await t.app.db.select().from(mfaTotp).where(eq(mfaTotp.userUuid, carol));
      expect(row?.confirmedAt).toBeInstanceOf(Date);
    });

    test("a SAML user who must change a password: no password asked, and a token not narrowed to the change", async () => {
      const t = get();
      const dave = await samlUser(t, await adminToken(t.app), idp, acme.tenant, "dave");
      await mustChangePassword(dave, acme.tenant);
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(firstParty, REDIRECT);
      const back = await samlReturn(browser, flow.url, "dave");
      expect(back.res.status).toBe(303);
      const { claims, acl } = await redeemed(firstParty, back.location!, flow);
      expect(claims).toMatchObject({ sub: dave, amr: ["saml"] });
      expect(acl).not.toContain(`auth.users.${dave}.password.update`);
    });

    test("the same with TOTP: the code after SAML, then the client, no password page", async () => {
      const t = get();
      const erin = await samlUser(t, await adminToken(t.app), idp, acme.tenant, "erin");
      const secret = await enrolTotp(erin, acme.tenant);
      await mustChangePassword(erin, acme.tenant);
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(firstParty, REDIRECT);
      const step = await samlReturn(browser, flow.url, "erin");
      expect(step.res.status).toBe(200);
      const done = await submit(browser, step.html, step.url, { code: currentCode(secret) });
      expect(done.res.status).toBe(303);
      const { claims, acl } = await redeemed(firstParty, done.location!, flow);
      expect(claims).toMatchObject({ sub: erin, amr: ["saml", "otp", "mfa"] });
      expect(acl).not.toContain(`auth.users.${erin}.password.update`);
    });
  },
  { config: { mfa: { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 5).toString("base64") }] } } },
);
