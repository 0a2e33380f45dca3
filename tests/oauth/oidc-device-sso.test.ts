// The device verification page and single sign-on (OIDC Core §3.1.2.3): a browser whose session
// serves the device client's tenant is offered "Continue as <user>" instead of the password form —
// still an explicit Allow or Deny (RFC 8628 §3.3, the code shown for §5.4) — and "Use another
// account" gives the form back. A third-party client's request lists what it asks, in the consent
// screen's words. The device's tokens are its own grant: signing out of the browser leaves them.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import * as oidc from "openid-client";
import { oidcBrowserSessions } from "../../src/db/schema.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import {
  discoverClient,
  hiddenFieldsOf,
  insecure,
  serveApp,
  startAuthorization,
  TestBrowser,
  type ServedApp,
} from "../helpers/oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
const DEVICE = "urn:ietf:params:oauth:grant-type:device_code";

describeEachDb(
  "OpenID Connect device verification page with single sign-on",
  (get) => {
    let served: ServedApp;
    let issuer: URL;
    let alice: string;
    let bob: string;
    let zoeUuid: string;
    let web: oidc.Configuration; // first-party web application: signs the browser in
    let foreignWeb: oidc.Configuration; // of another tenant
    let tv: oidc.Configuration; // first-party device client
    let partnerTv: oidc.Configuration; // third-party device client

    async function register(t: TestApp, token: string, body: Record<string, unknown>) {
      const r = await t.request("POST", "/0.1/oidc/clients", { token, body: { name: "rp", ...body } });
      if (r.status !== 201) throw new Error(r.text);
      return r.json as { client_id: string; client_secret?: string };
    }

    beforeAll(async () => {
      const t = get();
      served = serveApp(t);
      issuer = new URL(`${served.url}/0.1/oidc`);
      const tenant = await createTenantRow(t.app);
      const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      alice = await createUserRow(t.app, { tenantUuid: tenant, username: "alice", password: "alice-secret" });
      bob = await createUserRow(t.app, { tenantUuid: tenant, username: "bob", password: "bob-secret" });
      const webApp = async (token: string) => {
        const body = { client_type: "confidential", redirect_uris: [REDIRECT], first_party: true };
        return discoverClient(issuer, (await register(t, token, body)) as { client_id: string; client_secret: string });
      };
      web = await webApp(admin);
      const tenantB = await createTenantRow(t.app);
      const adminB = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenantB })).token;
      zoeUuid = await createUserRow(t.app, { tenantUuid: tenantB, username: "zoe", password: "zoe-secret" });
      foreignWeb = await webApp(adminB);
      const device = (first_party: boolean, name: string) =>
        register(t, admin, {
          name,
          client_type: "public",
          first_party,
          grant_types: [DEVICE, "refresh_token"],
        }).then((c) => oidc.discovery(issuer, c.client_id, undefined, oidc.None(), insecure));
      tv = await device(true, "Lobby TV");
      partnerTv = await device(false, "Partner TV");
    });
    afterAll(() => served?.stop());

    /** A browser signed in on the login page (a browser session), through the web client. */
    async function signedInBrowser(config = web, user = "alice", password = "alice-secret") {
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(config, REDIRECT);
      const r = await browser.signIn(flow.url, user, password);
      expect(r.res.status).toBe(303);
      const tokens = await oidc.authorizationCodeGrant(config, r.location!, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
      });
      return { browser, tokens };
    }

    /** The device polling once (RFC 8628 §3.4): the error it gets. */
    const pollError = async (deviceCode: string) => {
      const body = { grant_type: DEVICE, device_code: deviceCode, client_id: tv.clientMetadata().client_id };
      const r = await fetch(`${issuer.href}/token`, { method: "POST", body: new URLSearchParams(body) });
      return ((await r.json()) as { error?: string }).error;
    };
    const alive = async (token: string) => (await get().request("HEAD", `/0.1/token/${token}`)).status;

    test("a signed-in browser is offered 'Continue as alice' (no password); allowing gives the device alice's tokens with the real sign-in's auth_time; logout leaves them", async () => {
      const { browser, tokens: webTokens } = await signedInBrowser();
      const start = await oidc.initiateDeviceAuthorization(tv, { scope: "openid profile offline_access" });
      const polling = oidc.pollDeviceAuthorizationGrant(tv, start);
      const shown = await browser.get(start.verification_uri_complete!);
      expect(shown.res.status).toBe(200);
      expect(shown.html).toContain("Continue as alice");
      expect(shown.html).toContain(start.user_code);
      expect(shown.html).not.toContain('name="password"');
      // A first-party client: no list of scopes.
      expect(shown.html).not.toContain('class="scopes"');
      const form = hiddenFieldsOf(shown.html);
      expect(form.continue_as).toMatch(/^[0-9a-f-]{36}$/);
      const allowed = await browser.post("/0.1/oidc/device", { ...form, action: "allow" });
      expect(allowed.res.status).toBe(200);
      expect(allowed.html).toContain("Device connected");
      const tokens = await polling;
      expect(tokens.claims()).toMatchObject({ sub: alice, preferred_username: "alice", amr: ["pwd"] });
      expect(tokens.claims()!.auth_time).toBe(webTokens.claims()!.auth_time);
      // The device's grant is its own: no sid (logout of the browser leaves it, below).
      expect(webTokens.claims()!.sid).toBeTruthy();
      expect(tokens.claims()!.sid).toBeUndefined();
      expect(tokens.refresh_token).toBeTruthy();
      // The device is not the browser: signing out of the browser ends the web token, not the device's.
      const out = await browser.get(oidc.buildEndSessionUrl(web, { id_token_hint: webTokens.id_token! }).toString());
      expect(out.html).toContain("You are signed out");
      expect(await alive(webTokens.access_token)).toBe(404);
      expect(await alive(tokens.access_token)).toBe(204);
    }, 30_000);

    test("'Use another account' gives the password form; bob signs in there for the device", async () => {
      const { browser } = await signedInBrowser();
      const start = await oidc.initiateDeviceAuthorization(tv, { scope: "openid profile" });
      const polling = oidc.pollDeviceAuthorizationGrant(tv, start);
      const shown = await browser.get(start.verification_uri_complete!);
      const link = /<a href="([^"]+)">Use another account<\/a>/.exec(shown.html)![1]!.replaceAll("&amp;", "&");
      const other = await browser.get(new URL(link, start.verification_uri_complete!).toString());
      expect(other.html).toContain('name="password"');
      expect(other.html).not.toContain("Continue as");
      const form = hiddenFieldsOf(other.html);
      expect(form.continue_as).toBeUndefined();
      // A wrong password keeps the password form (not the browser's user).
      const wrong = await browser.post("/0.1/oidc/device", {
        ...form,
        username: "bob",
        password: "no",
        action: "allow",
      });
      expect(wrong.res.status).toBe(401);
      expect(wrong.html).toContain('name="password"');
      expect(wrong.html).not.toContain("Continue as");
      const r = await browser.post("/0.1/oidc/device", {
        ...hiddenFieldsOf(wrong.html),
        username: "bob",
        password: "bob-secret",
        action: "allow",
      });
      expect(r.html).toContain("Device connected");
      expect((await polling).claims()!.sub).toBe(bob);
    }, 30_000);

    test("no continue-as for a session of another tenant's user, nor a forged or stale continue_as; deny needs no sign-in", async () => {
      const t = get();
      const zoe = await signedInBrowser(foreignWeb, "zoe", "zoe-secret");
      const start = await oidc.initiateDeviceAuthorization(tv, { scope: "openid" });
      const shown = await zoe.browser.get(start.verification_uri_complete!);
      expect(shown.html).not.toContain("Continue as");
      expect(shown.html).toContain('name="password"');
      // Zoe's browser forging the continue-as form with her session id: refused, nothing approved.
      const [zoeSession] = await t.app.db
        .select({ id: oidcBrowserSessions.id })
        .from(oidcBrowserSessions)
        .where(eq(oidcBrowserSessions.userUuid, zoeUuid));
      const forged = await zoe.browser.post("/0.1/oidc/device", {
        ...hiddenFieldsOf(shown.html),
        continue_as: zoeSession!.id,
        action: "allow",
      });
      expect(forged.res.status).toBe(401);
      expect(forged.html).toContain("You are no longer signed in");
      // Alice's page, then her browser session expires before she clicks: the form, no approval.
      const { browser } = await signedInBrowser();
      const page = await browser.get(start.verification_uri_complete!);
      expect(page.html).toContain("Continue as alice");
      await t.app.db
        .update(oidcBrowserSessions)
        .set({ expiresAt: new Date(Date.now() - 1000) })
        .where(eq(oidcBrowserSessions.id, hiddenFieldsOf(page.html).continue_as!));
      const stale = await browser.post("/0.1/oidc/device", { ...hiddenFieldsOf(page.html), action: "allow" });
      expect(stale.res.status).toBe(401);
      expect(stale.html).toContain('name="password"');
      expect(await pollError(start.device_code)).toBe("authorization_pending");
      // Deny from the continue-as step.
      const again = await signedInBrowser();
      const page2 = await again.browser.get(start.verification_uri_complete!);
      const denied = await again.browser.post("/0.1/oidc/device", { ...hiddenFieldsOf(page2.html), action: "deny" });
      expect(denied.html).toContain("Request denied");
      expect(await pollError(start.device_code)).toBe("access_denied");
    }, 30_000);

    test("a third-party client's request shows what it asks, in words, on the allow step (with and without a session)", async () => {
      const start = await oidc.initiateDeviceAuthorization(partnerTv, { scope: "openid profile offline_access" });
      const anonymous = new TestBrowser(served.url);
      for (const browser of [anonymous, (await signedInBrowser()).browser]) {
        const shown = await browser.get(start.verification_uri_complete!);
        expect(shown.res.status).toBe(200);
        expect(shown.html).toContain("Partner TV will be able to:");
        expect(shown.html).toContain("<li>Know who you are (your account identifier and organisation)</li>");
        expect(shown.html).toContain("<li>See your name and username</li>");
        expect(shown.html).toContain("<li>Stay connected to your account when you are not using it</li>");
      }
    }, 30_000);
  },
  { config: { oidc: { device_poll_interval: 1 } } },
);
