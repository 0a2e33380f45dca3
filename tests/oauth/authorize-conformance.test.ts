// Behaviours of the authorization and userinfo endpoints that the OpenID Foundation's Basic and
// Config OP plans check and the other suites did not reach: id_token_hint and login_hint (OIDC Core
// §3.1.2.1), unknown parameters ignored, the authorization request by POST, userinfo by GET and POST
// with the token in the header or the body (§5.3.1, RFC 6750 §2), and a replayed code revoking the
// refresh token too (RFC 6749 §4.1.2). Already covered elsewhere: prompt=none with and without a
// session and max_age (tests/oidc-sso.test.ts, tests/oidc-code-flow.test.ts), key rotation keeping
// the previous key published (tests/oidc-keys.test.ts).
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as oidc from "openid-client";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import {
  discoverClient,
  hiddenFieldsOf,
  serveApp,
  startAuthorization,
  TestBrowser,
  type ServedApp,
} from "../helpers/oidc.ts";

const REDIRECT = "https://rp.example.com/callback";

interface Registered {
  client_id: string;
  client_secret: string;
}

describeEachDb("OIDC authorization endpoint: conformance behaviours", (get) => {
  let served: ServedApp;
  let issuer: URL;
  let web: Registered;
  let other: Registered;
  let config: oidc.Configuration;

  beforeAll(async () => {
    const t = get();
    served = serveApp(t);
    issuer = new URL(`${served.url}/0.1/oidc`);
    const tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    await createUserRow(t.app, { tenantUuid: tenant, username: "erin", password: "erin-secret" });
    await createUserRow(t.app, { tenantUuid: tenant, username: "frank", password: "frank-secret" });
    const register = async () =>
      (
        await t.request("POST", "/0.1/oidc/clients", {
          token: admin,
          body: { name: "rp", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true },
        })
      ).json as Registered;
    web = await register();
    other = await register();
    config = await discoverClient(issuer, web);
  });
  afterAll(() => served?.stop());

  /** Signs `user` in with a fresh browser; the tokens and the browser (its session cookie). */
  const signedIn = async (user: string, client = web, extra: Record<string, string> = {}) => {
    const cfg = client === web ? config : await discoverClient(issuer, client);
    const browser = new TestBrowser(served.url);
    const flow = await startAuthorization(cfg, REDIRECT, extra);
    const back = await browser.signIn(flow.url, user, `${user}-secret`);
    expect(back.res.status).toBe(303);
    const tokens = await oidc.authorizationCodeGrant(cfg, back.location!, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
    });
    return { tokens, browser };
  };

  test("login_hint prefills the login form (the user may still change it)", async () => {
    const flow = await startAuthorization(config, REDIRECT, { login_hint: "erin" });
    const browser = new TestBrowser(served.url);
    const page = await browser.get(flow.url);
    expect(page.res.status).toBe(200);
    expect(page.html).toMatch(/<input type="text" id="username" name="username"[^>]*value="erin"/);
    // Escaped like any value.
    const hostile = await browser.get((await startAuthorization(config, REDIRECT, { login_hint: '"><b>x' })).url);
    expect(hostile.html).not.toContain('"><b>x');
    // The hint is no sign-in: frank signs in on the prefilled form.
    const back = await browser.post("/0.1/oidc/authorize", {
      ...hiddenFieldsOf(page.html),
      username: "frank",
      password: "frank-secret",
    });
    expect(back.location!.searchParams.get("code")).toBeString();
  });

  test("id_token_hint: the hinted user's session signs in silently; another user's does not (login_required); a forged or foreign hint is invalid_request", async () => {
    const erin = await signedIn("erin");
    const frank = await signedIn("frank");
    const hintErin = erin.tokens.id_token!;
    const hintFrank = frank.tokens.id_token!;
    const open = async (browser: TestBrowser, extra: Record<string, string>) =>
      browser.get((await startAuthorization(config, REDIRECT, extra)).url);

    const same = await open(erin.browser, { id_token_hint: hintErin, prompt: "none" });
    expect(same.res.status).toBe(303);
    expect(same.location!.searchParams.get("code")).toBeString();

    const otherUser = await open(erin.browser, { id_token_hint: hintFrank, prompt: "none" });
    expect(otherUser.location!.searchParams.get("error")).toBe("login_required");
    // Without prompt=none: the login form, not erin's session.
    const form = await open(erin.browser, { id_token_hint: hintFrank });
    expect(form.res.status).toBe(200);
    expect(form.html).toContain('name="password"');

    const [h, p, s] = hintErin.split(".");
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...erin.tokens.claims(), sub: "someone" })).toString("base64url")}.${s}`;
    expect(p).toBeString();
    for (const hint of [forged, "garbage", (await signedIn("erin", other)).tokens.id_token!]) {
      const r = await open(erin.browser, { id_token_hint: hint });
      expect(r.res.status).toBe(303);
      expect(r.location!.searchParams.get("error")).toBe("invalid_request");
    }
  });

  test("unknown parameters are ignored", async () => {
    const { browser } = await signedIn("erin");
    const flow = await startAuthorization(config, REDIRECT, {
      ui_locales: "fr-CA",
      claims_locales: "fr",
      acr_values: "urn:example:unknown",
      display: "page",
      vendor_extension: "whatever",
    });
    const r = await browser.get(flow.url);
    expect(r.res.status).toBe(303);
    const tokens = await oidc.authorizationCodeGrant(config, r.location!, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
    });
    expect(tokens.access_token).toBeString();
  });

  test("the authorization request by POST (OIDC Core §3.1.2.1): the login form, or with a session the code", async () => {
    const flow = await startAuthorization(config, REDIRECT);
    const params = Object.fromEntries(new URL(flow.url).searchParams);
    const fresh = new TestBrowser(served.url);
    const page = await fresh.post("/0.1/oidc/authorize", params);
    expect(page.res.status).toBe(200);
    expect(page.html).toContain('name="password"');
    const back = await fresh.post("/0.1/oidc/authorize", {
      ...hiddenFieldsOf(page.html),
      username: "erin",
      password: "erin-secret",
    });
    expect(back.res.status).toBe(303);
    const tokens = await oidc.authorizationCodeGrant(config, back.location!, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
    });
    expect(tokens.access_token).toBeString();
    // With the session: straight back with a code.
    const again = await startAuthorization(config, REDIRECT);
    const sso = await fresh.post("/0.1/oidc/authorize", Object.fromEntries(new URL(again.url).searchParams));
    expect(sso.res.status).toBe(303);
    expect(sso.location!.searchParams.get("code")).toBeString();
    // A POST with credentials but no CSRF token is still the login form's, and refused.
    const noCsrf = await fresh.post("/0.1/oidc/authorize", { ...params, username: "erin", password: "erin-secret" });
    expect(noCsrf.res.status).toBe(400);
    // Errors of a POSTed request are those of a GET one.
    const bad = await fresh.post("/0.1/oidc/authorize", { ...params, redirect_uri: "https://evil.example/cb" });
    expect(bad.res.status).toBe(400);
  });

  test("userinfo by GET and POST, the token in the header or the form body; both at once is invalid_request", async () => {
    const { tokens } = await signedIn("erin", web, { scope: "openid profile" });
    const at = tokens.access_token;
    const url = `${issuer.href}/userinfo`;
    const form = (body: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
        body: new URLSearchParams(body),
      });
    const byGet = await fetch(url, { headers: { Authorization: `Bearer ${at}` } });
    const byPostHeader = await form({}, { Authorization: `Bearer ${at}` });
    const byPostBody = await form({ access_token: at });
    for (const r of [byGet, byPostHeader, byPostBody]) {
      expect(r.status).toBe(200);
      expect(await r.json()).toMatchObject({ preferred_username: "erin" });
    }
    // openid-client's userinfo call (GET, header).
    expect(await oidc.fetchUserInfo(config, at, oidc.skipSubjectCheck)).toMatchObject({ preferred_username: "erin" });
    const both = await form({ access_token: at }, { Authorization: `Bearer ${at}` });
    expect(both.status).toBe(400);
    expect(((await both.json()) as { error: string }).error).toBe("invalid_request");
    const wrong = await form({ access_token: "garbage" });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toContain('error="invalid_token"');
    const none = await form({});
    expect(none.status).toBe(401);
  });

  test("claims per scope: openid alone gives sub (and the tenant) only; profile adds the names held", async () => {
    const bare = await signedIn("erin", web, { scope: "openid" });
    const info = await oidc.fetchUserInfo(config, bare.tokens.access_token, oidc.skipSubjectCheck);
    expect(Object.keys(info).sort()).toEqual(["sub", "tenant_uuid"]);
    const profile = await signedIn("erin", web, { scope: "openid profile" });
    const more = await oidc.fetchUserInfo(config, profile.tokens.access_token, oidc.skipSubjectCheck);
    expect(more.preferred_username).toBe("erin");
  });

  test("a replayed code revokes everything the first exchange issued: access token and refresh token", async () => {
    const t = get();
    const browser = new TestBrowser(served.url);
    const flow = await startAuthorization(config, REDIRECT, { scope: "openid offline_access", prompt: "consent" });
    let back = await browser.signIn(flow.url, "erin", "erin-secret");
    if (back.res.status === 200) back = await browser.consent(back.html, "allow");
    const code = back.location!.searchParams.get("code")!;
    const exchange = () =>
      fetch(`${issuer.href}/token`, {
        method: "POST",
        headers: {
          "Content-Type": "application/x-www-form-urlencoded",
          Authorization: `Basic ${btoa(`${web.client_id}:${web.client_secret}`)}`,
        },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code,
          redirect_uri: REDIRECT,
          code_verifier: flow.verifier,
        }),
      });
    const first = (await (await exchange()).json()) as { access_token: string; refresh_token?: string };
    expect(first.refresh_token).toBeString();
    expect((await t.request("HEAD", `/0.1/token/${first.access_token}`)).status).toBe(204);
    const replay = await exchange();
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as { error: string }).error).toBe("invalid_grant");
    expect((await t.request("HEAD", `/0.1/token/${first.access_token}`)).status).toBe(404);
    const refreshed = await fetch(`${issuer.href}/token`, {
      method: "POST",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        Authorization: `Basic ${btoa(`${web.client_id}:${web.client_secret}`)}`,
      },
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: first.refresh_token! }),
    });
    expect(refreshed.status).toBe(400);
    expect(((await refreshed.json()) as { error: string }).error).toBe("invalid_grant");
  });
});
