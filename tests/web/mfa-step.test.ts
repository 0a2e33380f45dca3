// The login page's second step over HTTP (issue 25; the browser flows: mfa-browser.test.ts): a
// wrong code counts as a failed login (throttled), the pending sign-in is bound to the browser's
// CSRF cookie, used once, and needs the CSRF token; a user without a factor signs in as before;
// passkey options are refused without a pending sign-in unless the tenant allows passwordless; after
// the step the sign-in goes on as the password form's (browser session with the factors, single
// sign-on, consent, max_age); the device page asks a TOTP user for a code, and refuses a passkey-only
// user with a message.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { oidcBrowserSessions, oidcCodes, oidcDeviceCodes, passkeys } from "../../src/db/schema.ts";
import { currentCode } from "../../src/services/auth/totp.ts";
import { normaliseUserCode } from "../../src/services/oidc/device.ts";
import { hashCode } from "../../src/services/oidc/sign-in.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import {
  hiddenFieldsOf,
  openLoginPage,
  serveApp,
  submitLogin,
  TestBrowser,
  type LoginPage,
  type ServedApp,
} from "../helpers/oidc.ts";

let t: TestApp;
let served: ServedApp;
let authorizeUrl: string;
let secondUrl: string;
let partnerUrl: string;
let deviceClientId: string;
let tenant: string;

beforeAll(async () => {
  t = await createTestApp("pglite", {
    config: {
      mfa: { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 5).toString("base64") }] },
      login_throttling: { max_failures: 3 },
    },
  });
  served = serveApp(t);
  tenant = await createTenantRow(t.app);
  const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
  const client = (
    await t.request("POST", "/0.1/oidc/clients", {
      token: admin,
      body: { name: "RP", client_type: "confidential", redirect_uris: ["https://rp.test/cb"], first_party: true },
    })
  ).json;
  const urlFor = (clientId: string) =>
    `${served.url}/0.1/oidc/authorize?client_id=${clientId}&redirect_uri=${encodeURIComponent("https://rp.test/cb")}&response_type=code&scope=openid&state=s1`;
  authorizeUrl = urlFor(client.client_id);
  const register = async (body: Record<string, unknown>) =>
    (
      await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: { client_type: "confidential", redirect_uris: ["https://rp.test/cb"], ...body },
      })
    ).json.client_id as string;
  secondUrl = urlFor(await register({ name: "Second", first_party: true }));
  partnerUrl = urlFor(await register({ name: "Partner" }));
  deviceClientId = await register({
    name: "TV",
    client_type: "public",
    redirect_uris: [],
    grant_types: ["urn:ietf:params:oauth:grant-type:device_code"],
    first_party: true,
  });
}, 60_000);

afterAll(async () => {
  await served?.stop();
  await t?.close();
});

async function userWithTotp(username: string): Promise<string> {
  const uuid = await createUserRow(t.app, { tenantUuid: tenant, username, password: "pw-secret" });
  const token = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: uuid, tenantUuid: tenant })).token;
  const started = await t.request("POST", "/0.1/users/me/mfa/totp", { token });
  await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
    token,
    body: { code: currentCode(started.json.secret) },
  });
  return started.json.secret;
}

/** The step's page after a right password, with its hidden fields (the pending handle among them). */
async function stepPage(username: string): Promise<LoginPage & { step: Response; stepHidden: Record<string, string> }> {
  const page = await openLoginPage(authorizeUrl);
  const step = await submitLogin(served.url, page, username, "pw-secret");
  const html = await step.text();
  const stepHidden: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    stepHidden[m[1]!] = m[2]!.replaceAll("&amp;", "&");
  return { ...page, step, stepHidden };
}

function postStep(cookie: string, fields: Record<string, string>): Promise<Response> {
  return fetch(`${served.url}/0.1/oidc/authorize-mfa`, {
    method: "POST",
    redirect: "manual",
    body: new URLSearchParams(fields),
    headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: cookie },
  });
}

const nextCode = (secret: string) => currentCode(secret, Date.now() + 30_000);

describe("the login page's second step over HTTP", () => {
  test("a user without a factor is redirected with a code at once, as before", async () => {
    await createUserRow(t.app, { tenantUuid: tenant, username: "plain", password: "pw-secret" });
    const page = await openLoginPage(authorizeUrl);
    const r = await submitLogin(served.url, page, "plain", "pw-secret");
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toStartWith("https://rp.test/cb?code=");
  });

  test("a code appended to the password (FreeIPA's convention) passes both steps at once; the code records pwd otp mfa", async () => {
    const secret = await userWithTotp("append");
    const page = await openLoginPage(authorizeUrl);
    const r = await submitLogin(served.url, page, "append", `pw-secret${nextCode(secret)}`);
    expect(r.status).toBe(303);
    const code = new URL(r.headers.get("location")!).searchParams.get("code")!;
    const [row] = await t.app.db
      .select()
      .from(oidcCodes)
      .where(eq(oidcCodes.codeHash, hashCode(code)));
    expect(row!.amr).toEqual(["pwd", "otp", "mfa"]);
  });

  test("the step is single use, bound to the browser, and needs the CSRF token", async () => {
    const secret = await userWithTotp("sam");
    const s = await stepPage("sam");
    expect(s.step.status).toBe(200);
    expect(s.step.headers.get("content-security-policy")).toContain("form-action 'self' https://rp.test/cb");
    expect(s.stepHidden.pending).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Another browser (its own CSRF cookie and token) cannot use this pending sign-in.
    const other = await openLoginPage(authorizeUrl);
    const stolen = await postStep(other.cookie, {
      ...s.stepHidden,
      csrf_token: other.hidden.csrf_token!,
      code: nextCode(secret),
    });
    expect(stolen.status).toBe(400);
    expect(await stolen.text()).toContain("expired or was already used");
    // No CSRF token.
    const { csrf_token: _, ...noCsrf } = s.stepHidden;
    expect((await postStep(s.cookie, { ...noCsrf, code: nextCode(secret) })).status).toBe(400);
    const ok = await postStep(s.cookie, { ...s.stepHidden, code: nextCode(secret) });
    expect(ok.status).toBe(303);
    expect(ok.headers.get("location")).toMatch(/^https:\/\/rp\.test\/cb\?code=.+&state=s1&iss=/);
    const again = await postStep(s.cookie, { ...s.stepHidden, code: currentCode(secret, Date.now() + 60_000) });
    expect(again.status).toBe(400);
  });

  test("wrong codes count as failed logins: past max_failures the step answers 429, and so does the password form", async () => {
    await userWithTotp("guess");
    const s = await stepPage("guess");
    for (const code of ["000001", "000002", "000003"]) {
      const r = await postStep(s.cookie, { ...s.stepHidden, code });
      expect(r.status).toBe(401);
      expect(await r.text()).toContain("That code is not valid.");
    }
    const locked = await postStep(s.cookie, { ...s.stepHidden, code: "000004" });
    expect(locked.status).toBe(429);
    const page = await openLoginPage(authorizeUrl);
    expect((await submitLogin(served.url, page, "guess", "pw-secret")).status).toBe(429);
  });

  test("passkey options: refused without a pending sign-in while the tenant does not allow passwordless", async () => {
    const page = await openLoginPage(authorizeUrl);
    const options = (fields: Record<string, string>) =>
      fetch(`${served.url}/0.1/oidc/passkey-options`, {
        method: "POST",
        body: new URLSearchParams(fields),
        headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: page.cookie },
      });
    expect((await options(page.hidden)).status).toBe(400);
    expect(page.html).not.toContain("data-passkey");
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    await t.request("PUT", `/0.1/tenants/${tenant}/mfa`, { token: admin, body: { mfa: null, passwordless: true } });
    const r = await options(page.hidden);
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body.options.userVerification).toBe("required");
    expect(body.options.allowCredentials).toBeUndefined();
    const withPasskeys = await openLoginPage(authorizeUrl);
    expect(withPasskeys.html).toContain('data-passkey="authenticate"');
    expect(withPasskeys.headers.get("content-security-policy")).toContain("script-src 'self'");
    const { csrf_token: _, ...noCsrf } = page.hidden;
    expect((await options(noCsrf)).status).toBe(400);
    const script = await fetch(`${served.url}/0.1/oidc/assets/webauthn-browser.js`);
    expect([script.status, script.headers.get("content-type")]).toEqual([200, "text/javascript; charset=utf-8"]);
    expect(await script.text()).toContain("SimpleWebAuthnBrowser");
    await t.request("PUT", `/0.1/tenants/${tenant}/mfa`, { token: admin, body: { mfa: null, passwordless: null } });
  });

  test("after the step the sign-in goes on as the password form's: the browser session carries the factors, single sign-on reports them, a third-party client asks consent, prompt=login asks both steps again, logout ends it", async () => {
    const secret = await userWithTotp("sso");
    const b = new TestBrowser(served.url);
    const step = await b.signIn(authorizeUrl, "sso", "pw-secret");
    expect(step.res.status).toBe(200);
    expect(step.html).toContain("Two-step verification");
    // No browser session (no single sign-on) before the second factor.
    expect(b.cookie).not.toContain("tessera_oidc_session=");
    const done = await b.post("/0.1/oidc/authorize-mfa", { ...hiddenFieldsOf(step.html), code: nextCode(secret) });
    expect(done.res.status).toBe(303);
    expect(await amrOf(done.location)).toEqual(["pwd", "otp", "mfa"]);
    expect(b.cookie).toContain("tessera_oidc_session=");
    const sessions = await t.app.db.select().from(oidcBrowserSessions).where(eq(oidcBrowserSessions.login, "sso"));
    expect(sessions.map((r) => r.amr)).toEqual([["pwd", "otp", "mfa"]]);
    // Single sign-on to another client: no page, the real factors in the code.
    const sso = await b.get(secondUrl);
    expect(sso.res.status).toBe(303);
    expect(await amrOf(sso.location)).toEqual(["pwd", "otp", "mfa"]);
    // A third-party client: the consent page, then the code.
    const consent = await b.get(partnerUrl);
    expect(consent.res.status).toBe(200);
    expect(consent.html).toContain("Partner wants to access your account");
    const allowed = await b.consent(consent.html, "allow");
    expect(allowed.res.status).toBe(303);
    expect(await amrOf(allowed.location)).toEqual(["pwd", "otp", "mfa"]);
    // A fresh sign-in asked for (prompt=login; max_age takes the same path): the password, then the step again.
    const fresh = await b.signIn(`${secondUrl}&prompt=login`, "sso", "pw-secret");
    expect(fresh.res.status).toBe(200);
    expect(fresh.html).toContain("Two-step verification");
    // Logout ends that browser session as any other (RP-Initiated Logout 1.0): the next authorization asks again.
    const ask = await b.get(`${served.url}/0.1/oidc/logout`);
    expect(ask.html).toContain("Sign out?");
    expect((await b.post("/0.1/oidc/logout", hiddenFieldsOf(ask.html))).res.status).toBe(200);
    expect(await t.app.db.select().from(oidcBrowserSessions).where(eq(oidcBrowserSessions.login, "sso"))).toEqual([]);
    const after = await b.get(secondUrl);
    expect([after.res.status, after.html.includes('name="password"')]).toEqual([200, true]);
  });

  test("a third-party client's consent comes after the step, not before: no code and no session without the factor", async () => {
    const secret = await userWithTotp("third");
    const b = new TestBrowser(served.url);
    const step = await b.signIn(partnerUrl, "third", "pw-secret");
    expect(step.html).toContain("Two-step verification");
    const wrong = await b.post("/0.1/oidc/authorize-mfa", { ...hiddenFieldsOf(step.html), code: "000000" });
    expect(wrong.res.status).toBe(401);
    expect(b.cookie).not.toContain("tessera_oidc_session=");
    const consent = await b.post("/0.1/oidc/authorize-mfa", { ...hiddenFieldsOf(wrong.html), code: nextCode(secret) });
    expect(consent.res.status).toBe(200);
    expect(consent.html).toContain("Partner wants to access your account");
    const denied = await b.consent(consent.html, "deny");
    expect(denied.location?.searchParams.get("error")).toBe("access_denied");
  });

  test("the device page asks a TOTP user for a code with the password (amr pwd otp mfa); a passkey-only user is refused with a message", async () => {
    const secret = await userWithTotp("tv-user");
    const device = async () => {
      const r = await fetch(`${served.url}/0.1/oidc/device_authorization`, {
        method: "POST",
        body: new URLSearchParams({ client_id: deviceClientId, scope: "openid" }),
      });
      expect(r.status).toBe(200);
      return (await r.json()) as { user_code: string; verification_uri_complete: string };
    };
    const b = new TestBrowser(served.url);
    const started = await device();
    const confirm = await b.get(started.verification_uri_complete);
    expect(confirm.res.status).toBe(200);
    const form = hiddenFieldsOf(confirm.html);
    const allow = (html: string, username: string, extra: Record<string, string> = {}) =>
      b.post("/0.1/oidc/device", {
        ...hiddenFieldsOf(html),
        username,
        password: "pw-secret",
        action: "allow",
        ...extra,
      });
    const asked = await allow(confirm.html, "tv-user");
    expect(asked.res.status).toBe(401);
    expect(asked.html).toContain("Your account uses two-step verification");
    expect(asked.html).toContain('name="mfa_code"');
    // A wrong code: the generic failure, the code field kept.
    const wrong = await allow(confirm.html, "tv-user", { mfa_code: "000000" });
    expect(wrong.res.status).toBe(401);
    expect(wrong.html).toContain('name="mfa_code"');
    const ok = await allow(confirm.html, "tv-user", { mfa_code: nextCode(secret) });
    expect(ok.res.status).toBe(200);
    expect(ok.html).toContain("Device connected");
    const [row] = await t.app.db
      .select()
      .from(oidcDeviceCodes)
      .where(eq(oidcDeviceCodes.userCode, normaliseUserCode(form.user_code!)!));
    expect(row?.amr).toEqual(["pwd", "otp", "mfa"]);

    // A user whose only factor is a passkey: refused, told why and where to go; nothing approved.
    const uuid = await createUserRow(t.app, { tenantUuid: tenant, username: "tv-passkey", password: "pw-secret" });
    await storedPasskey(uuid);
    const second = await device();
    const confirm2 = await b.get(second.verification_uri_complete);
    const refused = await allow(confirm2.html, "tv-passkey");
    expect(refused.res.status).toBe(401);
    expect(refused.html).toContain("second step is a passkey, which this page cannot use");
    expect(refused.html).toContain("/0.1/oidc/account");
    expect(refused.html).not.toContain('name="mfa_code"');

    // A user of a tenant requiring MFA, with nothing enrolled: refused with the way to enrol, no enrol-only token.
    const strict = await createTenantRow(t.app, { parentUuid: tenant });
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    expect(
      (await t.request("PUT", `/0.1/tenants/${strict}/mfa`, { token: admin, body: { mfa: "required" } })).status,
    ).toBe(204);
    await createUserRow(t.app, { tenantUuid: strict, username: "tv-strict", password: "pw-secret" });
    const third = await device();
    const confirm3 = await b.get(third.verification_uri_complete);
    const enrolFirst = await allow(confirm3.html, "tv-strict");
    expect(enrolFirst.res.status).toBe(401);
    expect(enrolFirst.html).toContain("Your organisation requires two-step verification");
    const [pending] = await t.app.db
      .select()
      .from(oidcDeviceCodes)
      .where(eq(oidcDeviceCodes.userCode, normaliseUserCode(hiddenFieldsOf(confirm3.html).user_code!)!));
    expect([pending?.status, pending?.tokenUuid]).toEqual(["pending", null]);
  });

  test("the step is a page of the provider's page system: the client's tenant's layout wraps it, the CSP stays the provider's (scripts only with a passkey button)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mfa-layout-"));
    const branded = await createTenantRow(t.app);
    const layout = join(dir, "brand.html");
    writeFileSync(
      layout,
      `<!doctype html><html lang="en"><head><title>Brand · {{ title }}</title></head>
<body><header id="brand">Brand {{ step }}</header><script>alert(1)</script><main>{{ content }}</main></body></html>`,
    );
    t.app.config.oidc.tenant_login_page_templates[branded] = layout;
    try {
      const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: branded })).token;
      const clientId = (
        await t.request("POST", "/0.1/oidc/clients", {
          token: admin,
          body: {
            name: "Branded",
            client_type: "confidential",
            redirect_uris: ["https://rp.test/cb"],
            first_party: true,
          },
        })
      ).json.client_id;
      const url = authorizeUrl.replace(/client_id=[^&]+/, `client_id=${clientId}`);
      const uuid = await createUserRow(t.app, { tenantUuid: branded, username: "branded", password: "pw-secret" });
      const own = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: uuid, tenantUuid: branded })).token;
      const started = await t.request("POST", "/0.1/users/me/mfa/totp", { token: own });
      await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
        token: own,
        body: { code: currentCode(started.json.secret) },
      });
      const step = await new TestBrowser(served.url).signIn(url, "branded", "pw-secret");
      expect(step.res.status).toBe(200);
      expect(step.html).toContain('<header id="brand">Brand mfa</header>');
      expect(step.html).toContain('name="pending"');
      const csp = step.res.headers.get("content-security-policy")!;
      expect(csp).toStartWith("default-src 'none'; style-src 'nonce-");
      expect(csp).not.toContain("script-src");
      // With a passkey: the provider's two scripts, inside the step (the layout has no say), and script-src 'self'.
      await storedPasskey(uuid);
      const withKey = await new TestBrowser(served.url).signIn(url, "branded", "pw-secret");
      expect(withKey.html).toContain('<header id="brand">Brand mfa</header>');
      expect(withKey.html).toContain('<script src="assets/passkey.js" defer></script>');
      expect(withKey.res.headers.get("content-security-policy")).toContain("script-src 'self'; connect-src 'self';");
    } finally {
      delete t.app.config.oidc.tenant_login_page_templates[branded];
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
/** A passkey row for `userUuid` (its key is never used: the page only needs to know the user has one). */
async function storedPasskey(userUuid: string): Promise<void> {
  await t.app.db.insert(passkeys).values({
    credentialId: `cred-${userUuid}`,
    uuid: crypto.randomUUID(),
    userUuid,
    name: "Key",
    publicKey: "AA",
    backupEligible: false,
    backedUp: false,
  });
}

/** The `amr` recorded with the code the browser was sent back with. */
async function amrOf(location: URL | null): Promise<unknown> {
  const code = location?.searchParams.get("code");
  expect(code).toBeTruthy();
  const [row] = await t.app.db
    .select()
    .from(oidcCodes)
    .where(eq(oidcCodes.codeHash, hashCode(code!)));
  return row?.amr;
}
