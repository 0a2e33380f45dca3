// Sign-in through a tenant's upstream OpenID provider on the hosted login page, HTTP-level: a browser
// without JavaScript (helpers/oidc.ts TestBrowser) between a relying party of Tessera (openid-client) and
// a real upstream provider (panva's oidc-provider in a child process). The happy path ends with the
// relying party's code exchanged as after a password sign-in; every refusal of OIDC Core §3.1.3.7 (iss,
// aud, azp, exp, nonce, signature), a replayed or foreign state, an unreachable provider, an unverified
// email, provisioning off and another tenant's provider ends on a page that says why, with no code.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import * as oidc from "openid-client";
import { emails, upstreamOidcLinks, users } from "../../src/db/schema.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { currentCode } from "../../src/services/auth/totp.ts";
import {
  apiCall,
  discoverClient,
  followRedirects,
  hiddenFieldsOf,
  serveApp,
  type ServedApp,
  startAuthorization,
  TestBrowser,
} from "../helpers/oidc.ts";
import { startUpstreamOidc, type Tamper, type UpstreamOidc } from "../helpers/upstream-oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
const LOCAL = { outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true } };
const MFA_KEYS = { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 5).toString("base64") }] };

const unescapeAmp = (s: string) => s.replaceAll("&amp;", "&");

describeEachDb(
  "sign-in through an upstream OpenID provider",
  (get) => {
    let served: ServedApp;
    let issuer: URL;
    let upstream: UpstreamOidc;
    let tenant: string;
    let admin: string;
    let config: oidc.Configuration;
    let provider: string;

    /** The REST API over HTTP, so that `redirect_uri` names the served address. */
    const api = (method: string, path: string, token: string, body?: unknown) =>
      apiCall(served.url, method, path, token, body);

    /** A provider of the token's tenant at `up`, registered there with its redirect URI (as an administrator does). */
    const addProvider = async (
      _t: TestApp,
      token: string,
      up: UpstreamOidc,
      extra: Record<string, unknown> = {},
    ): Promise<string> => {
      const base = { name: `p-${Math.random()}`, display_name: "Corp SSO", issuer: up.issuer, provisioning: "create" };
      const made = await api("POST", "/0.1/backends/oidc", token, {
        ...base,
        client_id: "pending",
        client_secret: "pending",
        ...extra,
      });
      if (made.status !== 201) throw new Error(made.text);
      expect(made.json.redirect_uri).toBe(`${issuer.href}/upstream/${made.json.uuid}/callback`);
      const creds = await up.register([made.json.redirect_uri]);
      const put = await api("PUT", `/0.1/backends/oidc/${made.json.uuid}`, token, { ...base, ...extra, ...creds });
      if (put.status !== 204) throw new Error(put.text);
      return made.json.uuid;
    };

    beforeAll(async () => {
      const t = get();
      served = serveApp(t);
      issuer = new URL(`${served.url}/0.1/oidc`);
      upstream = await startUpstreamOidc({
        accounts: {
          alice: {
            preferred_username: "alice.up",
            email: "alice@corp.example",
            email_verified: true,
            given_name: "Alice",
            family_name: "Upstream",
          },
          bob: { preferred_username: "bob.up", email: "bob@corp.example", email_verified: false },
        },
      });
      tenant = await createTenantRow(t.app);
      admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const client = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: { name: "RP", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true },
      });
      config = await discoverClient(issuer, client.json);
      provider = await addProvider(t, admin, upstream);
    });
    afterAll(async () => {
      served?.stop();
      await upstream?.stop();
    });

    /** The login page, its "Continue with" buttons, and where the one of `display` leads. */
    const loginPage = async (browser: TestBrowser, extra: Record<string, string> = {}) => {
      const flow = await startAuthorization(config, REDIRECT, { scope: "openid profile email", ...extra });
      const shown = await browser.get(flow.url);
      expect(shown.res.status).toBe(200);
      const buttons = [...shown.html.matchAll(/<a class="button secondary" href="([^"]+)">([^<]+)<\/a>/g)].map((m) => ({
        href: `${issuer.href}/${unescapeAmp(m[1]!)}`,
        label: m[2]!,
      }));
      return { flow, html: shown.html, buttons };
    };

    /**
     * Follows redirects as a browser does until the answer is a page or a redirect to the relying party;
     * `stopAtCallback` stops on the way back at Tessera's redirect URI (not followed).
     */
    const follow = async (browser: TestBrowser, url: string, stopAtCallback = false) => {
      const end = await followRedirects(browser, url, {
        stop: stopAtCallback ? (next) => next.pathname.includes("/oidc/upstream/") : undefined,
      });
      return { ...end, callback: end.stopped ? end.location!.href : null };
    };

    const signInViaLabel = async (account: string, label: string) => {
      await upstream.set({ account, tamper: null });
      const browser = new TestBrowser(served.url);
      const page = await loginPage(browser);
      const end = await follow(browser, page.buttons.find((b) => b.label === label)!.href);
      return { page, end };
    };

    const signInVia = async (account: string, tamper: Tamper = null) => {
      await upstream.set({ account, tamper });
      const browser = new TestBrowser(served.url);
      const page = await loginPage(browser);
      const button = page.buttons.find((b) => b.label === "Continue with Corp SSO");
      expect(button).toBeDefined();
      const end = await follow(browser, button!.href);
      return { page, end, browser };
    };

    test("JIT: a new user of the provider's tenant, and the relying party gets its code as after a password", async () => {
      const t = get();
      const { page, end } = await signInVia("alice");
      expect(end.res.status).toBe(303);
      expect(end.location!.origin).toBe("https://rp.example.com");
      const tokens = await oidc.authorizationCodeGrant(config, end.location!, {
        pkceCodeVerifier: page.flow.verifier,
        expectedState: page.flow.state,
        expectedNonce: page.flow.nonce,
      });
      const sub = tokens.claims()!.sub;
      const [user] = await t.app.db.select().from(users).where(eq(users.uuid, sub));
      expect(user).toMatchObject({
        tenantUuid: tenant,
        username: "alice.up",
        firstname: "Alice",
        lastname: "Upstream",
        authenticationMethod: "oidc",
      });
      const mail = await t.app.db.select().from(emails).where(eq(emails.userUuid, sub));
      expect(mail.map((m) => m.address)).toEqual(["alice@corp.example"]);
      expect(tokens.claims()!.amr).toEqual(["oidc"]);
      // The second time, the link: the same user, none made.
      const again = await signInVia("alice");
      const back = await oidc.authorizationCodeGrant(config, again.end.location!, {
        pkceCodeVerifier: again.page.flow.verifier,
        expectedState: again.page.flow.state,
        expectedNonce: again.page.flow.nonce,
      });
      expect(back.claims()!.sub).toBe(sub);
      const links = await t.app.db.select().from(upstreamOidcLinks).where(eq(upstreamOidcLinks.userUuid, sub));
      expect(links).toHaveLength(1);
      expect(links[0]!.subject).toBe("alice");
    });

    for (const tamper of ["iss", "aud", "nonce", "exp", "azp", "signature"] as const) {
      test(`an ID token with a wrong ${tamper} is refused: a page says so, no code`, async () => {
        const { end } = await signInVia("alice", tamper);
        expect(end.res.status).toBe(401);
        expect(end.html).toContain("sent an identity that could not be verified");
        expect(end.location).toBeNull();
      });
    }

    test("a replayed state, or the callback in another browser, is refused", async () => {
      await upstream.set({ account: "alice", tamper: null });
      const browser = new TestBrowser(served.url);
      const page = await loginPage(browser);
      const atCallback = await follow(browser, page.buttons[0]!.href, true);
      expect(atCallback.callback).not.toBeNull();
      // Another browser (no binding cookie): refused, and the sign-in is spent.
      const stranger = new TestBrowser(served.url);
      const foreign = await stranger.get(atCallback.callback!);
      expect(foreign.res.status).toBe(401);
      expect(foreign.html).toContain("expired or was already used");
      const replay = await browser.get(atCallback.callback!);
      expect(replay.res.status).toBe(401);
      expect(replay.html).toContain("expired or was already used");
    });

    test("the provider's error answer, or an answer naming another issuer (RFC 9207), is refused", async () => {
      for (const [change, words] of [
        [
          (u: URL) => {
            u.searchParams.delete("code");
            u.searchParams.set("error", "access_denied");
          },
          "Corp SSO did not sign you in (access_denied)",
        ],
        [
          (u: URL) => u.searchParams.set("iss", "https://attacker.example.com"),
          "The answer did not come from Corp SSO",
        ],
      ] as const) {
        await upstream.set({ account: "alice", tamper: null });
        const browser = new TestBrowser(served.url);
        const page = await loginPage(browser);
        const at = await follow(browser, page.buttons.find((b) => b.label === "Continue with Corp SSO")!.href, true);
        const url = new URL(at.callback!);
        expect(url.searchParams.get("iss")).toBe(upstream.issuer); // the provider sends RFC 9207's iss
        change(url);
        const end = await browser.get(url.href);
        expect(end.res.status).toBe(401);
        expect(end.html).toContain(words);
        expect(end.location).toBeNull();
      }
    });

    test("an unverified email never links to an existing account (provisioning link)", async () => {
      const t = get();
      const existing = await createUserRow(t.app, { tenantUuid: tenant, username: "bob" });
      await t.app.db
        .insert(emails)
        .values({ address: "bob@corp.example", confirmed: true, main: true, userUuid: existing });
      const uuid = await addProvider(t, admin, upstream, { display_name: "Linked SSO", provisioning: "link" });
      await upstream.set({ account: "bob", tamper: null });
      const browser = new TestBrowser(served.url);
      const page = await loginPage(browser);
      const button = page.buttons.find((b) => b.label === "Continue with Linked SSO")!;
      const end = await follow(browser, button.href);
      expect(end.res.status).toBe(401);
      expect(end.html).toContain("No account here is linked to this Linked SSO identity");
      expect(await t.app.db.select().from(upstreamOidcLinks).where(eq(upstreamOidcLinks.userUuid, existing))).toEqual(
        [],
      );
      await t.request("DELETE", `/0.1/backends/oidc/${uuid}`, { token: admin });
    });

    test("link: an existing account of the verified email is linked only once the browser signed in to it", async () => {
      const t = get();
      const kate = await createUserRow(t.app, { tenantUuid: tenant, username: "kate", password: "kate-pw" });
      await t.app.db
        .insert(emails)
        .values({ address: "Kate@corp.example", confirmed: true, main: true, userUuid: kate });
      const uuid = await addProvider(t, admin, upstream, { display_name: "Kate SSO", provisioning: "link" });
      await upstream.set({
        account: "kate",
        tamper: null,
        accounts: { kate: { preferred_username: "kate.up", email: "kate@corp.example", email_verified: true } },
      });
      const browser = new TestBrowser(served.url);
      // Without a session: the account's password is asked (web/upstream-link.ts); nothing linked yet.
      const first = await loginPage(browser);
      const asked = await follow(browser, first.buttons.find((b) => b.label === "Continue with Kate SSO")!.href);
      expect(asked.res.status).toBe(200);
      expect(asked.html).toContain("Type its password to link it to Kate SSO");
      expect(await t.app.db.select().from(upstreamOidcLinks).where(eq(upstreamOidcLinks.userUuid, kate))).toEqual([]);
      // Or the password on the login page, in this browser: its session is the proof.
      const flow = await startAuthorization(config, REDIRECT, { scope: "openid" });
      const signedIn = await browser.signIn(flow.url, "kate", "kate-pw");
      expect(signedIn.res.status).toBe(303);
      const again = await loginPage(browser, { prompt: "login" });
      const end = await follow(browser, again.buttons.find((b) => b.label === "Continue with Kate SSO")!.href);
      expect(end.res.status).toBe(303);
      const tokens = await oidc.authorizationCodeGrant(config, end.location!, {
        pkceCodeVerifier: again.flow.verifier,
        expectedState: again.flow.state,
        expectedNonce: again.flow.nonce,
      });
      expect(tokens.claims()!.sub).toBe(kate);
      expect(tokens.claims()!.amr).toEqual(["oidc"]);
      const links = await t.app.db.select().from(upstreamOidcLinks).where(eq(upstreamOidcLinks.userUuid, kate));
      expect(links.map((l) => [l.providerUuid, l.subject])).toEqual([[uuid, "kate"]]);
      // From now on, another browser signs in with the provider alone.
      const other = await signInViaLabel("kate", "Continue with Kate SSO");
      expect(other.end.res.status).toBe(303);
      await t.request("DELETE", `/0.1/backends/oidc/${uuid}`, { token: admin });
    });

    test("a linked user whose authentication method is not oidc is refused on a page that says so", async () => {
      const t = get();
      const native = await createUserRow(t.app, { tenantUuid: tenant, username: "ivan" });
      await t.app.db.insert(upstreamOidcLinks).values({ providerUuid: provider, subject: "bob", userUuid: native });
      const { end } = await signInVia("bob");
      expect(end.res.status).toBe(401);
      expect(end.html).toContain("This account does not sign in with Corp SSO");
      await t.app.db.delete(upstreamOidcLinks).where(eq(upstreamOidcLinks.userUuid, native));
    });

    test("provisioning off: no button, and a sign-in under way is refused with a page that says why", async () => {
      const t = get();
      const uuid = await addProvider(t, admin, upstream, { display_name: "Paused SSO" });
      await upstream.set({ account: "alice", tamper: null });
      const browser = new TestBrowser(served.url);
      const page = await loginPage(browser);
      const button = page.buttons.find((b) => b.label === "Continue with Paused SSO")!;
      const atCallback = await follow(browser, button.href, true);
      const current = await t.request("GET", `/0.1/backends/oidc/${uuid}`, { token: admin });
      const { uuid: _u, tenant_uuid: _t, redirect_uri: _r, preset: _p, ...settings } = current.json;
      await t.request("PUT", `/0.1/backends/oidc/${uuid}`, {
        token: admin,
        body: { ...settings, provisioning: "off" },
      });
      const end = await browser.get(atCallback.callback!);
      expect(end.res.status).toBe(401);
      expect(end.html).toContain("Sign-in with Paused SSO has been turned off by the administrator");
      const again = await loginPage(new TestBrowser(served.url));
      expect(again.buttons.map((b) => b.label)).not.toContain("Continue with Paused SSO");
      await t.request("DELETE", `/0.1/backends/oidc/${uuid}`, { token: admin });
    });

    test("another tenant's provider cannot be used by this tenant's clients", async () => {
      const t = get();
      const other = await createTenantRow(t.app);
      const otherAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: other })).token;
      const foreign = await addProvider(t, otherAdmin, upstream, { display_name: "Foreign SSO" });
      const browser = new TestBrowser(served.url);
      const page = await loginPage(browser);
      expect(page.buttons.map((b) => b.label)).not.toContain("Continue with Foreign SSO");
      const forged = page.buttons[0]!.href.replace(/provider=[^&]+/, `provider=${foreign}`);
      const r = await browser.get(forged);
      expect(r.res.status).toBe(400);
      expect(r.html).toContain("This sign-in option is not available for this application.");
      // In the page's language (the catalogues, docs/languages.md), as every other page text.
      const french = await loginPage(new TestBrowser(served.url), { ui_locales: "fr" });
      const forgedFr = french.buttons[0]!.href.replace(/provider=[^&]+/, `provider=${foreign}`);
      const fr = await new TestBrowser(served.url).get(forgedFr);
      expect(fr.res.status).toBe(400);
      expect(fr.html).toContain("Cette option de connexion n’est pas disponible pour cette application.");
      // The end of a sign-in that was never started (no cookie): expired, in the browser's language.
      const expired = await fetch(`${issuer.href}/upstream-sign-in`, { headers: { "Accept-Language": "de" } });
      expect(expired.status).toBe(400);
      expect(await expired.text()).toContain("Diese Anmeldung ist abgelaufen oder wurde bereits verwendet.");
    });

    test("Entra ID preset: the multi-tenant issuer's template filled with the ID token's tid", async () => {
      const t = get();
      const tid = "5b0c8a2e-9d4f-4c1e-8a7b-3f2d1e0c9b8a";
      const entra = await startUpstreamOidc({ tid, accounts: { henry: { preferred_username: "henry.up" } } });
      try {
        await entra.set({ account: "henry" });
        const uuid = await addProvider(t, admin, entra, {
          display_name: "Contoso",
          preset: "entra",
          issuer: entra.commonIssuer,
        });
        const browser = new TestBrowser(served.url);
        const page = await loginPage(browser);
        const button = page.buttons.find((b) => b.label === "Continue with Contoso")!;
        const end = await follow(browser, button.href);
        expect(end.res.status).toBe(303);
        expect(end.location!.origin).toBe("https://rp.example.com");
        const made = await t.app.db.select().from(users).where(eq(users.username, "henry.up"));
        expect(made.map((u) => u.tenantUuid)).toEqual([tenant]);
        await t.request("DELETE", `/0.1/backends/oidc/${uuid}`, { token: admin });
      } finally {
        await entra.stop();
      }
    });

    test("a user with TOTP: the second step after the upstream sign-in; amr oidc otp mfa (RFC 8176 §2)", async () => {
      const t = get();
      await upstream.set({
        account: "dave",
        tamper: null,
        accounts: { dave: { preferred_username: "dave.up", email: "dave@corp.example", email_verified: true } },
      });
      const first = await signInVia("dave");
      expect(first.end.res.status).toBe(303);
      const [dave] = await t.app.db
        .select()
        .from(users)
        .where(and(eq(users.tenantUuid, tenant), eq(users.username, "dave.up")));
      const own = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: dave!.uuid, tenantUuid: tenant }))
        .token;
      const started = await t.request("POST", "/0.1/users/me/mfa/totp", { token: own });
      const secret = started.json.secret as string;
      // The previous step's code (within the window): the next one is then a newer step (no replay).
      const confirmed = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
        token: own,
        body: { code: currentCode(secret, Date.now() - 30_000) },
      });
      expect(confirmed.status).toBeLessThan(300);
      const { page, end, browser } = await signInVia("dave");
      expect(end.res.status).toBe(200);
      expect(end.html).toContain('name="pending"');
      // The step's form, posted where a browser posts it: its action against the page's URL.
      const action = /<form method="post" action="([^"]*)"/.exec(end.html)![1]!;
      const target = new URL(unescapeAmp(action), end.url);
      expect(target.pathname).toBe("/0.1/oidc/authorize-mfa");
      const done = await browser.post(target.pathname, { ...hiddenFieldsOf(end.html), code: currentCode(secret) });
      expect(done.res.status).toBe(303);
      const tokens = await oidc.authorizationCodeGrant(config, done.location!, {
        pkceCodeVerifier: page.flow.verifier,
        expectedState: page.flow.state,
        expectedNonce: page.flow.nonce,
      });
      expect(tokens.claims()).toMatchObject({ sub: dave!.uuid, amr: ["oidc", "otp", "mfa"] });
    });

    test("must change the password: not after the upstream vouched (no password typed here), still after a password", async () => {
      const t = get();
      const uuid = await createUserRow(t.app, { tenantUuid: tenant, username: "mia", password: "mia-pw" });
      await t.app.db.insert(upstreamOidcLinks).values({ providerUuid: provider, subject: "mia", userUuid: uuid });
      await t.app.db
        .update(users)
        .set({ authenticationMethod: "oidc", passwordChangeRequired: true })
        .where(eq(users.uuid, uuid));
      await upstream.set({ accounts: { mia: { preferred_username: "mia.up" } } });
      // Through the upstream: straight back to the relying party, with the user's whole token.
      const { page, end } = await signInVia("mia");
      expect(end.html).not.toContain('name="new_password"');
      expect(end.res.status).toBe(303);
      expect(end.location!.origin).toBe("https://rp.example.com");
      const tokens = await oidc.authorizationCodeGrant(config, end.location!, {
        pkceCodeVerifier: page.flow.verifier,
        expectedState: page.flow.state,
        expectedNonce: page.flow.nonce,
      });
      expect(tokens.claims()).toMatchObject({ sub: uuid, amr: ["oidc"] });
      // The same user with a password: the new password first, as the administrator asked.
      await t.app.db.update(users).set({ authenticationMethod: "default" }).where(eq(users.uuid, uuid));
      const flow = await startAuthorization(config, REDIRECT, { scope: "openid" });
      const byPassword = await new TestBrowser(served.url).signIn(flow.url, "mia", "mia-pw");
      expect(byPassword.res.status).toBe(200);
      expect(byPassword.html).toContain('name="new_password"');
      await t.app.db.delete(upstreamOidcLinks).where(eq(upstreamOidcLinks.userUuid, uuid));
    });

    test("must change the password, with TOTP: the code after the upstream sign-in, then the code (no password page)", async () => {
      const t = get();
      const uuid = await createUserRow(t.app, { tenantUuid: tenant, username: "noel" });
      await t.app.db.insert(upstreamOidcLinks).values({ providerUuid: provider, subject: "noel", userUuid: uuid });
      await t.app.db.update(users).set({ authenticationMethod: "oidc" }).where(eq(users.uuid, uuid));
      const own = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: uuid, tenantUuid: tenant })).token;
      const secret = (await t.request("POST", "/0.1/users/me/mfa/totp", { token: own })).json.secret as string;
      const confirmed = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
        token: own,
        body: { code: currentCode(secret, Date.now() - 30_000) },
      });
      expect(confirmed.status).toBeLessThan(300);
      await t.app.db.update(users).set({ passwordChangeRequired: true }).where(eq(users.uuid, uuid));
      await upstream.set({ accounts: { noel: { preferred_username: "noel.up" } } });
      const { page, end, browser } = await signInVia("noel");
      expect(end.res.status).toBe(200);
      expect(end.html).toContain('name="pending"');
      const action = /<form method="post" action="([^"]*)"/.exec(end.html)![1]!;
      const target = new URL(unescapeAmp(action), end.url);
      const done = await browser.post(target.pathname, { ...hiddenFieldsOf(end.html), code: currentCode(secret) });
      expect(done.html).not.toContain('name="new_password"');
      expect(done.res.status).toBe(303);
      const tokens = await oidc.authorizationCodeGrant(config, done.location!, {
        pkceCodeVerifier: page.flow.verifier,
        expectedState: page.flow.state,
        expectedNonce: page.flow.nonce,
      });
      expect(tokens.claims()).toMatchObject({ sub: uuid, amr: ["oidc", "otp", "mfa"] });
      await t.app.db.delete(upstreamOidcLinks).where(eq(upstreamOidcLinks.userUuid, uuid));
    });

    test("a provider that stops answering: a clear page at sign-in, no code", async () => {
      const t = get();
      const flaky = await startUpstreamOidc({ accounts: { carol: { preferred_username: "carol.up" } } });
      await flaky.set({ account: "carol" });
      const uuid = await addProvider(t, admin, flaky, { display_name: "Flaky SSO" });
      const browser = new TestBrowser(served.url);
      const page = await loginPage(browser);
      const button = page.buttons.find((b) => b.label === "Continue with Flaky SSO")!;
      const atCallback = await follow(browser, button.href, true);
      await flaky.stop();
      const end = await browser.get(atCallback.callback!);
      expect(end.res.status).toBe(502);
      expect(end.html).toContain("Flaky SSO cannot be reached now");
      await t.request("DELETE", `/0.1/backends/oidc/${uuid}`, { token: admin });
      expect(
        await t.app.db
          .select()
          .from(users)
          .where(and(eq(users.tenantUuid, tenant), eq(users.username, "carol.up"))),
      ).toEqual([]);
    });

    test("JIT: the locale claim (OIDC Core §5.1) sets the new user's language when it is a tag; a mapping names another", async () => {
      const t = get();
      const localeOf = async (username: string) =>
        (
          await t.app.db
            .select({ locale: users.locale })
            .from(users)
            .where(and(eq(users.tenantUuid, tenant), eq(users.username, username)))
        )[0]?.locale;
      await upstream.set({
        accounts: {
          lena: { preferred_username: "lena.up", locale: "fr_ca" },
          max: { preferred_username: "max.up", locale: "not a tag!" },
          nora: { preferred_username: "nora.up", locale: "en", ui_language: "pt-br" },
        },
      });
      // `fr_ca`: the underscore form §5.1 lets a relying party accept, canonicalised as the users API does.
      const lena = await signInVia("lena");
      expect(lena.end.location!.origin).toBe("https://rp.example.com");
      expect(await localeOf("lena.up")).toBe("fr-CA");
      // Not a tag: the user is made all the same, with no language.
      const max = await signInVia("max");
      expect(max.end.location!.origin).toBe("https://rp.example.com");
      expect(await localeOf("max.up")).toBeNull();
      // A provider whose mapping names its own claim.
      const uuid = await addProvider(t, admin, upstream, {
        display_name: "Lang SSO",
        claim_mapping: { locale: "ui_language" },
      });
      const shown = await api("GET", `/0.1/backends/oidc/${uuid}`, admin);
      expect(shown.json.claim_mapping.locale).toBe("ui_language");
      const nora = await signInViaLabel("nora", "Continue with Lang SSO");
      expect(nora.end.location!.origin).toBe("https://rp.example.com");
      expect(await localeOf("nora.up")).toBe("pt-BR");
      await t.request("DELETE", `/0.1/backends/oidc/${uuid}`, { token: admin });
    });
  },
  { config: { ...LOCAL, mfa: MFA_KEYS } },
);
