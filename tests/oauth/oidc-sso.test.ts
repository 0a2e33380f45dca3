// The browser side of the OpenID Connect provider, driven by panva's openid-client as relying
// parties would, and by a cookie-keeping browser without JavaScript: single sign-on across clients
// (OIDC Core §3.1.2.3), max_age and prompt (§3.1.2.1, §3.1.2.6), the consent screen (§3.1.2.4,
// offline_access §11), RP-initiated logout (RP-Initiated Logout 1.0), and their refusals.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { eq } from "drizzle-orm";
import { SignJWT } from "jose";
import * as oidc from "openid-client";
import { oidcBrowserSessions, oidcCodes } from "../../src/db/schema.ts";
import { signingKey } from "../../src/services/oidc/keys.ts";
import { hashCode } from "../../src/services/oidc/sign-in.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import {
  discoverClient,
  hiddenFieldsOf,
  serveApp,
  startAuthorization,
  TestBrowser,
  type ServedApp,
  type StartedAuthorization,
} from "../helpers/oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
const LOGOUT_TO = "https://rp.example.com/signed-out";

interface Registered {
  client_id: string;
  client_secret: string;
  config: oidc.Configuration;
}

describeEachDb("OpenID Connect single sign-on, consent and logout", (get) => {
  let served: ServedApp;
  let issuer: URL;
  let tenant: string;
  let admin: string;
  let alice: string;
  let grafana: Registered; // first-party
  let wiki: Registered; // first-party
  let partner: Registered; // third-party: consent
  let otherTenantClient: Registered;

  async function register(t: TestApp, token: string, body: Record<string, unknown>): Promise<Registered> {
    const r = await t.request("POST", "/0.1/oidc/clients", {
      token,
      body: {
        name: "rp",
        client_type: "confidential",
        redirect_uris: [REDIRECT],
        post_logout_redirect_uris: [LOGOUT_TO],
        ...body,
      },
    });
    if (r.status !== 201) throw new Error(r.text);
    return { ...r.json, config: await discoverClient(issuer, r.json) };
  }

  beforeAll(async () => {
    const t = get();
    served = serveApp(t);
    issuer = new URL(`${served.url}/0.1/oidc`);
    tenant = await createTenantRow(t.app);
    admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    alice = await createUserRow(t.app, { tenantUuid: tenant, username: "alice", password: "alice-secret" });
    await createUserRow(t.app, { tenantUuid: tenant, username: "bob", password: "bob-secret" });
    grafana = await register(t, admin, { name: "Grafana", first_party: true });
    wiki = await register(t, admin, { name: "Wiki", first_party: true });
    partner = await register(t, admin, { name: "Partner <Portal>", first_party: false });
    const tenantB = await createTenantRow(t.app);
    const adminB = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenantB })).token;
    otherTenantClient = await register(t, adminB, { name: "B app", first_party: true });
  });
  afterAll(() => served?.stop());

  const start = (c: Registered, extra: Record<string, string> = {}) => startAuthorization(c.config, REDIRECT, extra);

  async function exchange(c: Registered, flow: StartedAuthorization, back: URL) {
    return oidc.authorizationCodeGrant(c.config, back, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
    });
  }

  /** A browser signed in to `c` through the form: the browser and the tokens. */
  async function signedIn(c: Registered = grafana, user = "alice", password = "alice-secret") {
    const browser = new TestBrowser(served.url);
    const flow = await start(c);
    const r = await browser.signIn(flow.url, user, password);
    expect(r.res.status).toBe(303);
    return { browser, tokens: await exchange(c, flow, r.location!) };
  }

  const tokenAlive = async (t: TestApp, token: string) => (await t.request("HEAD", `/0.1/token/${token}`)).status;

  test("single sign-on: signed in to one client, another client's authorization skips the form; auth_time is the real sign-in's", async () => {
    const t = get();
    const { browser, tokens: first } = await signedIn();
    const setCookies = (await browser.get((await start(grafana, { prompt: "login" })).url)).res.headers;
    expect(setCookies.get("content-type")).toContain("text/html"); // prompt=login: the form again
    const flow = await start(wiki);
    const sso = await browser.get(flow.url);
    expect(sso.res.status).toBe(303);
    expect(sso.location!.searchParams.get("code")).toBeTruthy();
    const second = await exchange(wiki, flow, sso.location!);
    expect(second.claims()!.sub).toBe(alice);
    expect(second.claims()!.aud).toBe(wiki.client_id);
    expect(second.claims()!.auth_time).toBe(first.claims()!.auth_time);
    expect(second.access_token).not.toBe(first.access_token);
    expect(await tokenAlive(t, first.access_token)).toBe(204);
    expect(await tokenAlive(t, second.access_token)).toBe(204);
  });

  test("the session cookie: HttpOnly, SameSite=Lax, scoped to the issuer's path; stored hashed", async () => {
    const t = get();
    const browser = new TestBrowser(served.url);
    const flow = await start(grafana);
    const shown = await browser.get(flow.url);
    const r = await fetch(`${served.url}/0.1/oidc/authorize`, {
      method: "POST",
      redirect: "manual",
      body: new URLSearchParams({ ...hiddenFieldsOf(shown.html), username: "alice", password: "alice-secret" }),
      headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: browser.cookie },
    });
    const session = r.headers.getSetCookie().find((c) => c.startsWith("tessera_oidc_session="))!;
    expect(session).toMatch(/HttpOnly/);
    expect(session).toMatch(/SameSite=Lax/);
    expect(session).toMatch(/Path=\/0\.1\/oidc(;|$)/);
    expect(session).not.toMatch(/Secure/); // served over http here; Secure behind https (oidc-templates.test.ts)
    const value = session.split(";")[0]!.split("=")[1]!;
    const rows = await t.app.db.select().from(oidcBrowserSessions);
    expect(rows.some((row) => row.cookieHash === createHash("sha256").update(value).digest("hex"))).toBe(true);
    expect(rows.some((row) => JSON.stringify(row).includes(value))).toBe(false);
  });

  test("max_age: a session older than max_age asks again; a younger one does not; auth_time stays the real one", async () => {
    const t = get();
    const { browser, tokens } = await signedIn();
    const authTime = tokens.claims()!.auth_time as number;
    // The session authenticated 120 s ago.
    await t.app.db
      .update(oidcBrowserSessions)
      .set({ authTime: authTime - 120 })
      .where(eq(oidcBrowserSessions.userUuid, alice));
    const young = await start(wiki, { max_age: "3600" });
    const ok = await browser.get(young.url);
    expect(ok.res.status).toBe(303);
    expect((await exchange(wiki, young, ok.location!)).claims()!.auth_time).toBe(authTime - 120);
    const old = await start(wiki, { max_age: "60" });
    const asked = await browser.get(old.url);
    expect(asked.res.status).toBe(200);
    expect(asked.html).toContain('name="password"');
    const again = await browser.post("/0.1/oidc/authorize", {
      ...hiddenFieldsOf(asked.html),
      username: "alice",
      password: "alice-secret",
    });
    expect(again.res.status).toBe(303);
    const claims = (await exchange(wiki, old, again.location!)).claims()!;
    expect(claims.auth_time as number).toBeGreaterThanOrEqual(authTime);
    // Not a number: refused to the client.
    const bad = await browser.get((await start(wiki, { max_age: "soon" })).url);
    expect(bad.location!.searchParams.get("error")).toBe("invalid_request");
  });

  test("prompt=login always asks; prompt=none answers the client without a page (login_required, consent_required, a code)", async () => {
    const browser = new TestBrowser(served.url);
    const none = await start(grafana, { prompt: "none" });
    const anonymous = await browser.get(none.url);
    expect(anonymous.res.status).toBe(303);
    expect(anonymous.location!.searchParams.get("error")).toBe("login_required");
    expect(anonymous.location!.searchParams.get("state")).toBe(none.state);
    expect(anonymous.location!.searchParams.get("iss")).toBe(issuer.href);
    await browser.signIn((await start(grafana)).url, "alice", "alice-secret");
    const login = await browser.get((await start(wiki, { prompt: "login" })).url);
    expect(login.res.status).toBe(200);
    expect(login.html).toContain('name="password"');
    const silent = await start(wiki, { prompt: "none" });
    const code = await browser.get(silent.url);
    expect(code.res.status).toBe(303);
    expect((await exchange(wiki, silent, code.location!)).claims()!.sub).toBe(alice);
    // Third-party client never consented: consent_required, no page.
    const partnerSilent = await browser.get((await start(partner, { prompt: "none" })).url);
    expect(partnerSilent.res.status).toBe(303);
    expect(partnerSilent.location!.searchParams.get("error")).toBe("consent_required");
    // none with another value is invalid (§3.1.2.1).
    const mixed = await browser.get((await start(wiki, { prompt: "none login" })).url);
    expect(mixed.location!.searchParams.get("error")).toBe("invalid_request");
  });

  test("consent: a third-party client shows the scopes in words; deny → access_denied; allow → code; remembered; new scopes or prompt=consent ask again", async () => {
    const t = get();
    const browser = new TestBrowser(served.url);
    const flow = await start(partner, { scope: "openid profile" });
    const page = await browser.signIn(flow.url, "bob", "bob-secret");
    expect(page.res.status).toBe(200);
    expect(page.html).toContain("Partner &lt;Portal&gt; wants to access your account");
    expect(page.html).toContain("See your name and username");
    expect(page.html).toContain("Signed in as <strong>bob</strong>");
    expect(page.res.headers.get("content-security-policy")).toContain(
      "form-action 'self' https://rp.example.com/callback",
    );
    // Nothing was issued before the user allowed it.
    const bob = (await t.request("GET", "/0.1/users?search=bob", { token: admin })).json.items[0].uuid;
    const before = await t.request("GET", `/0.1/users/${bob}/sessions`, { token: admin });
    expect(before.json.total).toBe(0);
    const denied = await browser.consent(page.html, "deny");
    expect(denied.res.status).toBe(303);
    expect(denied.location!.searchParams.get("error")).toBe("access_denied");
    expect(denied.location!.searchParams.get("state")).toBe(flow.state);
    // Asked again (a denial is not remembered); allowed this time.
    const flow2 = await start(partner, { scope: "openid profile" });
    const page2 = await browser.get(flow2.url);
    expect(page2.html).toContain("wants to access your account");
    const allowed = await browser.consent(page2.html, "allow");
    expect(allowed.res.status).toBe(303);
    expect((await exchange(partner, flow2, allowed.location!)).claims()!.preferred_username).toBe("bob");
    // Remembered: the same scopes go straight through.
    const flow3 = await start(partner, { scope: "openid profile" });
    const direct = await browser.get(flow3.url);
    expect(direct.res.status).toBe(303);
    expect(direct.location!.searchParams.get("code")).toBeTruthy();
    // A new scope (offline_access, OIDC Core §11) asks again; only once granted is it on the code.
    const flow4 = await start(partner, { scope: "openid profile offline_access" });
    const page4 = await browser.get(flow4.url);
    expect(page4.res.status).toBe(200);
    expect(page4.html).toContain("Stay connected to your account when you are not using it");
    const granted = await browser.consent(page4.html, "allow");
    const code = granted.location!.searchParams.get("code")!;
    const [issued] = await t.app.db
      .select()
      .from(oidcCodes)
      .where(eq(oidcCodes.codeHash, hashCode(code)));
    expect(issued!.scope.split(" ")).toContain("offline_access");
    // prompt=consent always asks.
    const page5 = await browser.get((await start(partner, { scope: "openid profile", prompt: "consent" })).url);
    expect(page5.res.status).toBe(200);
    expect(page5.html).toContain("wants to access your account");
  });

  test("offline_access with consent, end to end (OIDC Core §11): deny leaves no family; allow gives a refresh token; a later prompt=consent shown or denied keeps it; a first-party client needs no consent", async () => {
    const t = get();
    const dave = await createUserRow(t.app, { tenantUuid: tenant, username: "dave", password: "dave-secret" });
    const families = async () =>
      (await t.request("GET", `/0.1/users/${dave}/tokens`, { token: admin })).json.items.map(
        (i: { client_id: string }) => i.client_id,
      );
    const browser = new TestBrowser(served.url);
    const offline = { scope: "openid offline_access", prompt: "consent" };
    // Third-party: the consent screen says it; denied → access_denied, no token, no family.
    const flow = await start(partner, offline);
    const page = await browser.signIn(flow.url, "dave", "dave-secret");
    expect(page.html).toContain("Stay connected to your account when you are not using it");
    expect(await families()).toEqual([]);
    const denied = await browser.consent(page.html, "deny");
    expect(denied.location!.searchParams.get("error")).toBe("access_denied");
    await expect(exchange(partner, flow, denied.location!)).rejects.toThrow();
    expect(await families()).toEqual([]);
    expect((await t.request("GET", `/0.1/users/${dave}/sessions`, { token: admin })).json.total).toBe(0);
    // Allowed → the code exchange gives a refresh token, which refreshes; the family is listed.
    const flow2 = await start(partner, offline);
    const allowed = await browser.consent((await browser.get(flow2.url)).html, "allow");
    const tokens = await exchange(partner, flow2, allowed.location!);
    expect(tokens.refresh_token).toBeTruthy();
    expect(await families()).toEqual([partner.client_id]);
    const refreshed = await oidc.refreshTokenGrant(partner.config, tokens.refresh_token!);
    expect(await tokenAlive(t, refreshed.access_token)).toBe(204);
    // Signing in again and asked again (prompt=login consent), denied this time: the grant given
    // before stays — neither showing the consent screen nor a refusal revokes it.
    const flow3 = await start(partner, { ...offline, prompt: "login consent" });
    const again = await browser.signIn(flow3.url, "dave", "dave-secret");
    expect(again.html).toContain("Stay connected");
    const denied2 = await browser.consent(again.html, "deny");
    expect(denied2.location!.searchParams.get("error")).toBe("access_denied");
    expect(await families()).toEqual([partner.client_id]);
    expect(await tokenAlive(t, tokens.access_token)).toBe(204);
    expect((await oidc.refreshTokenGrant(partner.config, tokens.refresh_token!)).access_token).toBeTruthy();
    // First-party: no consent screen, the refresh token straight away.
    const flow4 = await start(grafana, { scope: "openid offline_access" });
    const direct = await browser.get(flow4.url);
    expect(direct.res.status).toBe(303);
    const first = await exchange(grafana, flow4, direct.location!);
    expect(first.refresh_token).toBeTruthy();
    expect((await families()).sort()).toEqual([partner.client_id, grafana.client_id].sort());
  });

  test("CSRF: the login, consent and logout forms without their token are refused (400 page, no redirect, no code)", async () => {
    const browser = new TestBrowser(served.url);
    const flow = await start(partner);
    const shown = await browser.get(flow.url);
    const { csrf_token: _, ...noCsrf } = hiddenFieldsOf(shown.html);
    const login = await browser.post("/0.1/oidc/authorize", { ...noCsrf, username: "bob", password: "bob-secret" });
    expect(login.res.status).toBe(400);
    expect(login.location).toBeNull();
    expect(login.html).toContain("did not come from this site");
    const page = await browser.signIn(flow.url, "bob", "bob-secret");
    const fields = hiddenFieldsOf(page.html);
    const forged = await browser.post("/0.1/oidc/authorize/consent", {
      ...fields,
      csrf_token: "A".repeat(43),
      decision: "allow",
    });
    expect(forged.res.status).toBe(400);
    expect(forged.location).toBeNull();
    // Another browser (no CSRF cookie) posting the same form: refused.
    const other = new TestBrowser(served.url);
    const replayed = await other.post("/0.1/oidc/authorize/consent", { ...fields, decision: "allow" });
    expect(replayed.res.status).toBe(400);
    const logout = await browser.post("/0.1/oidc/logout", { confirm: "yes" });
    expect(logout.res.status).toBe(400);
    expect(
      (await browser.get((await start(grafana, { prompt: "none" })).url)).location!.searchParams.get("code"),
    ).toBeTruthy();
  });

  test("near-miss redirect URIs never redirect, even for a signed-in browser", async () => {
    const { browser } = await signedIn();
    for (const uri of [`${REDIRECT}/`, `${REDIRECT}?x=1`, REDIRECT.toUpperCase(), "https://rp.example.com/callbac"]) {
      const url = new URL((await start(grafana)).url);
      url.searchParams.set("redirect_uri", uri);
      const r = await browser.get(url.toString());
      expect(r.res.status).toBe(400);
      expect(r.location).toBeNull();
    }
  });

  test("tenant isolation: a client of another tenant does not sign in this tenant's users through the session", async () => {
    const { browser } = await signedIn();
    const flow = oidc.buildAuthorizationUrl(otherTenantClient.config, {
      redirect_uri: REDIRECT,
      scope: "openid",
      prompt: "none",
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: "S256",
    });
    const silent = await browser.get(flow.toString());
    expect(silent.location!.searchParams.get("error")).toBe("login_required");
    flow.searchParams.delete("prompt");
    const form = await browser.get(flow.toString());
    expect(form.res.status).toBe(200);
    expect(form.html).toContain('name="password"');
    const refused = await browser.post("/0.1/oidc/authorize", {
      ...hiddenFieldsOf(form.html),
      username: "alice",
      password: "alice-secret",
    });
    expect(refused.res.status).toBe(401);
    expect(refused.location).toBeNull();
  });

  test("RP-initiated logout with id_token_hint: the session's tokens are revoked, back to the registered URI with state; the old cookie no longer signs in", async () => {
    const t = get();
    const { browser, tokens } = await signedIn();
    const flow = await start(wiki);
    const wikiTokens = await exchange(wiki, flow, (await browser.get(flow.url)).location!);
    const stolenCookie = browser.cookie;
    const end = oidc.buildEndSessionUrl(grafana.config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: LOGOUT_TO,
      state: "bye-123",
    });
    expect(end.href.startsWith(`${issuer.href}/logout`)).toBe(true);
    const out = await browser.get(end.toString());
    expect(out.res.status).toBe(303);
    expect(out.location!.href).toBe(`${LOGOUT_TO}?state=bye-123`);
    expect(out.res.headers.getSetCookie().some((c) => /^tessera_oidc_session=;.*Max-Age=0/i.test(c))).toBe(true);
    expect(await tokenAlive(t, tokens.access_token)).toBe(404);
    expect(await tokenAlive(t, wikiTokens.access_token)).toBe(404);
    // The cookie, replayed after logout (by anyone who kept it), signs nobody in.
    const replay = new TestBrowser(served.url);
    replay.cookie = stolenCookie;
    const r = await replay.get((await start(wiki, { prompt: "none" })).url);
    expect(r.location!.searchParams.get("error")).toBe("login_required");
  });

  test("signing in again (prompt=login) keeps the earlier tokens tied to the browser: logout revokes them all; another account in the browser signs the first out", async () => {
    const t = get();
    const { browser, tokens } = await signedIn();
    const flow = await start(wiki, { prompt: "login" });
    const again = await browser.signIn(flow.url, "alice", "alice-secret");
    const second = await exchange(wiki, flow, again.location!);
    const other = await browser.signIn((await start(wiki, { prompt: "login" })).url, "bob", "bob-secret");
    expect(other.res.status).toBe(303);
    expect(await tokenAlive(t, tokens.access_token)).toBe(404);
    expect(await tokenAlive(t, second.access_token)).toBe(404);
    // And the same user twice: both tokens go at logout.
    const bobFirst = await signedIn(grafana, "bob", "bob-secret");
    const relogin = await start(wiki, { prompt: "login" });
    const r = await bobFirst.browser.signIn(relogin.url, "bob", "bob-secret");
    const bobSecond = await exchange(wiki, relogin, r.location!);
    expect(await tokenAlive(t, bobFirst.tokens.access_token)).toBe(204);
    const out = await bobFirst.browser.post("/0.1/oidc/logout", { id_token_hint: bobSecond.id_token! });
    expect(out.res.status).toBe(200);
    expect(out.html).toContain("You are signed out");
    expect(await tokenAlive(t, bobFirst.tokens.access_token)).toBe(404);
    expect(await tokenAlive(t, bobSecond.access_token)).toBe(404);
  });

  test("sid: ID tokens issued through a browser session name it (its public id, not the cookie), across clients, a new sign-in and refreshes; a hint's sid ends it from a browser without the cookie; offline access survives logout", async () => {
    const t = get();
    const browser = new TestBrowser(served.url);
    const flow = await start(grafana, { scope: "openid offline_access" });
    const first = await exchange(grafana, flow, (await browser.signIn(flow.url, "alice", "alice-secret")).location!);
    const cookie = /tessera_oidc_session=([^;]+)/.exec(browser.cookie)![1]!;
    const [row] = await t.app.db
      .select()
      .from(oidcBrowserSessions)
      .where(eq(oidcBrowserSessions.cookieHash, createHash("sha256").update(cookie).digest("hex")));
    const sid = first.claims()!.sid;
    expect(sid).toBe(row!.id);
    expect(sid).not.toBe(cookie);
    // Single sign-on to another client: the same sid. Signing in again (prompt=login): a new cookie, the same sid.
    const flow2 = await start(wiki);
    const second = await exchange(wiki, flow2, (await browser.get(flow2.url)).location!);
    expect(second.claims()!.sid).toBe(sid);
    const flow3 = await start(wiki, { prompt: "login" });
    const third = await exchange(wiki, flow3, (await browser.signIn(flow3.url, "alice", "alice-secret")).location!);
    expect(third.claims()!.sid).toBe(sid);
    expect(/tessera_oidc_session=([^;]+)/.exec(browser.cookie)![1]).not.toBe(cookie);
    // A refresh continues the sign-in's session: its ID token carries the sign-in's sid (Back-Channel Logout 1.0 §2.1).
    const refreshed = await oidc.refreshTokenGrant(grafana.config, first.refresh_token!);
    expect(refreshed.claims()!.sid).toBe(sid);
    // Logout from another browser (the RP's back end, another device: no cookie) with the hint: its sid ends the session.
    const elsewhere = new TestBrowser(served.url);
    const out = await elsewhere.get(
      oidc.buildEndSessionUrl(wiki.config, { id_token_hint: second.id_token!, post_logout_redirect_uri: LOGOUT_TO })
        .href,
    );
    expect(out.res.status).toBe(303);
    for (const token of [first, second, third]) expect(await tokenAlive(t, token.access_token)).toBe(404);
    const silent = await browser.get((await start(wiki, { prompt: "none" })).url);
    expect(silent.location!.searchParams.get("error")).toBe("login_required");
    // The sign-in's session ended with what its refresh token gave; the refresh token itself goes on
    // (OIDC Core §11: offline access outlives the browser session), in a session of its own, no sid.
    expect(await tokenAlive(t, refreshed.access_token)).toBe(404);
    const later = await oidc.refreshTokenGrant(grafana.config, first.refresh_token!);
    expect(await tokenAlive(t, later.access_token)).toBe(204);
    expect(later.claims()!.sid).toBeUndefined();
    // A hint whose sid names another user's session ends nothing of theirs.
    const bob = await signedIn(grafana, "bob", "bob-secret");
    const key = await signingKey(t.app, "ES256");
    const now = Math.floor(Date.now() / 1000);
    const crafted = await new SignJWT({ sid: bob.tokens.claims()!.sid })
      .setProtectedHeader({ alg: "ES256", kid: key.kid })
      .setIssuer(issuer.href)
      .setSubject(alice)
      .setAudience(grafana.client_id)
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(key.privateKey);
    await new TestBrowser(served.url).get(`${issuer.href}/logout?id_token_hint=${crafted}`);
    expect(await tokenAlive(t, bob.tokens.access_token)).toBe(204);
  });

  test("logout refusals: unregistered or near-miss post_logout_redirect_uri, forged or foreign id_token_hint → error page, never a redirect; an expired hint is accepted", async () => {
    const t = get();
    const { browser, tokens } = await signedIn();
    const hint = tokens.id_token!;
    const logoutUrl = (p: Record<string, string>) => `${issuer.href}/logout?${new URLSearchParams(p)}`;
    for (const uri of [`${LOGOUT_TO}/`, "https://evil.example.com/", `${LOGOUT_TO}?x=1`, REDIRECT]) {
      const r = await browser.get(logoutUrl({ id_token_hint: hint, post_logout_redirect_uri: uri }));
      expect(r.res.status).toBe(400);
      expect(r.location).toBeNull();
    }
    // Without any client: a redirect URI cannot be checked, so refused.
    expect((await browser.get(logoutUrl({ post_logout_redirect_uri: LOGOUT_TO }))).res.status).toBe(400);
    const [h, p, sig] = hint.split(".");
    const forged = `${h}.${p}.${sig![0] === "A" ? "B" : "A"}${sig!.slice(1)}`;
    const r = await browser.get(logoutUrl({ id_token_hint: forged, post_logout_redirect_uri: LOGOUT_TO }));
    expect(r.res.status).toBe(400);
    expect(r.location).toBeNull();
    const mismatch = await browser.get(logoutUrl({ id_token_hint: hint, client_id: wiki.client_id }));
    expect(mismatch.res.status).toBe(400);
    // Still signed in after all of these.
    expect(
      (await browser.get((await start(wiki, { prompt: "none" })).url)).location!.searchParams.get("code"),
    ).toBeTruthy();
    // An expired ID token of ours still names the user and client (§2).
    const key = await signingKey(t.app, "ES256");
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({})
      .setProtectedHeader({ alg: "ES256", kid: key.kid })
      .setIssuer(issuer.href)
      .setSubject(alice)
      .setAudience(grafana.client_id)
      .setIssuedAt(now - 7200)
      .setExpirationTime(now - 3600)
      .sign(key.privateKey);
    const out = await browser.get(
      logoutUrl({ id_token_hint: expired, post_logout_redirect_uri: LOGOUT_TO, state: "s" }),
    );
    expect(out.res.status).toBe(303);
    expect(out.location!.href).toBe(`${LOGOUT_TO}?state=s`);
    expect(await tokenAlive(t, tokens.access_token)).toBe(404);
  });

  test("logout without id_token_hint asks first (CSRF); confirmed, the signed-out page; a hint for another user asks too", async () => {
    const t = get();
    const { browser, tokens } = await signedIn();
    const ask = await browser.get(
      `${issuer.href}/logout?client_id=${grafana.client_id}&post_logout_redirect_uri=${encodeURIComponent(LOGOUT_TO)}&state=x`,
    );
    expect(ask.res.status).toBe(200);
    expect(ask.html).toContain("Sign out?");
    expect(await tokenAlive(t, tokens.access_token)).toBe(204);
    // Bob's ID token presented in Alice's browser: Alice decides.
    const bob = await signedIn(grafana, "bob", "bob-secret");
    const foreign = await browser.get(`${issuer.href}/logout?id_token_hint=${bob.tokens.id_token}`);
    expect(foreign.res.status).toBe(200);
    expect(foreign.html).toContain("Sign out?");
    expect(await tokenAlive(t, tokens.access_token)).toBe(204);
    const confirmed = await browser.post("/0.1/oidc/logout", hiddenFieldsOf(ask.html));
    expect(confirmed.res.status).toBe(303);
    expect(confirmed.location!.href).toBe(`${LOGOUT_TO}?state=x`);
    expect(await tokenAlive(t, tokens.access_token)).toBe(404);
    expect(await tokenAlive(t, bob.tokens.access_token)).toBe(204);
    // No redirect asked: the signed-out page.
    const again = await signedIn();
    const page = await again.browser.get(`${issuer.href}/logout`);
    const done = await again.browser.post("/0.1/oidc/logout", hiddenFieldsOf(page.html));
    expect(done.res.status).toBe(200);
    expect(done.html).toContain("You are signed out");
    expect(await tokenAlive(t, again.tokens.access_token)).toBe(404);
  });

  test("the browser session ends when the user is disabled or its password is reset", async () => {
    const t = get();
    const carol = await createUserRow(t.app, { tenantUuid: tenant, username: "carol", password: "carol-secret" });
    const { browser } = await signedIn(grafana, "carol", "carol-secret");
    const silent = async () => (await browser.get((await start(wiki, { prompt: "none" })).url)).location!;
    expect((await silent()).searchParams.get("code")).toBeTruthy();
    const reset = await t.request("POST", `/0.1/users/password/reset?user_uuid=${carol}`, {
      token: admin,
      body: { password: "carol-new-secret" },
    });
    expect(reset.status).toBe(204);
    expect((await silent()).searchParams.get("error")).toBe("login_required");
    const second = await signedIn(grafana, "carol", "carol-new-secret");
    const disable = await t.request("PUT", `/0.1/users/${carol}`, {
      token: admin,
      body: { username: "carol", enabled: false },
    });
    expect(disable.status).toBe(204);
    const r = await second.browser.get((await start(wiki, { prompt: "none" })).url);
    expect(r.location!.searchParams.get("error")).toBe("login_required");
  });

  test("discovery lists the end-session endpoint and the prompt values", async () => {
    const meta = await (await fetch(`${issuer.href}/.well-known/openid-configuration`)).json();
    expect(meta.end_session_endpoint).toBe(`${issuer.href}/logout`);
    expect(meta.prompt_values_supported).toEqual(["none", "login", "consent", "select_account"]);
  });
});
