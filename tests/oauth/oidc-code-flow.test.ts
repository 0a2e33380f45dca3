// The authorization code flow with PKCE, driven end to end by panva's openid-client (the
// OpenID-certified relying-party library) against the app served over real HTTP, and every
// refusal of OIDC Core §3.1.2 / RFC 6749 §4.1 / RFC 7636 as a negative test.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { decodeProtectedHeader } from "jose";
import * as oidc from "openid-client";
import { emails, oidcCodes } from "../../src/db/schema.ts";
import { atHash } from "../../src/services/oidc/id-token.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import {
  browserSignIn,
  openLoginPage,
  serveApp,
  startAuthorization,
  submitLogin,
  type ServedApp,
} from "../helpers/oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
const insecure = { execute: [oidc.allowInsecureRequests] };

interface Registered {
  client_id: string;
  client_secret?: string;
}

describeEachDb("OpenID Connect authorization code flow", (get) => {
  let served: ServedApp;
  let issuer: URL;
  let tenant: string;
  let admin: string;
  let alice: string;
  let web: Registered;
  let mobile: Registered;
  let other: Registered;

  const register = async (t: TestApp, body: Record<string, unknown>): Promise<Registered> => {
    const r = await t.request("POST", "/0.1/oidc/clients", {
      token: admin,
      body: { name: "rp", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true, ...body },
    });
    if (r.status !== 201) throw new Error(r.text);
    return r.json;
  };

  beforeAll(async () => {
    const t = get();
    served = serveApp(t);
    issuer = new URL(`${served.url}/0.1/oidc`);
    tenant = await createTenantRow(t.app);
    admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    alice = await createUserRow(t.app, { tenantUuid: tenant, username: "alice", password: "alice-secret" });
    await t.app.db
      .insert(emails)
      .values({ address: "alice@example.com", confirmed: true, main: true, userUuid: alice });
    web = await register(t, { name: "Web <App>" });
    mobile = await register(t, {
      client_type: "public",
      redirect_uris: ["com.example.phone:/cb"],
      id_token_signed_response_alg: "RS256",
    });
    other = await register(t, {});
  });
  afterAll(() => served?.stop());

  /** The confidential web client as openid-client sees it (discovery, client_secret_basic). */
  const webClient = () =>
    oidc.discovery(issuer, web.client_id, undefined, oidc.ClientSecretBasic(web.client_secret!), insecure);

  const start = (config: oidc.Configuration, extra: Record<string, string> = {}, redirect = REDIRECT) =>
    startAuthorization(config, redirect, { scope: "openid profile email", ...extra });

  test("confidential client (client_secret_basic): code → ES256 ID token, userinfo; the access token is a Tessera token", async () => {
    const t = get();
    const config = await webClient();
    const flow = await start(config);
    const back = await browserSignIn(served.url, flow.url, "alice", "alice-secret");
    expect(back.searchParams.get("iss")).toBe(issuer.href); // RFC 9207
    const tokens = await oidc.authorizationCodeGrant(config, back, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
    });
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({
      iss: issuer.href,
      sub: alice,
      aud: web.client_id,
      nonce: flow.nonce,
      tenant_uuid: tenant,
      amr: ["pwd"],
      preferred_username: "alice",
      email: "alice@example.com",
      email_verified: true,
    });
    expect(typeof claims.auth_time).toBe("number");
    expect(claims.at_hash).toBe(atHash(tokens.access_token));
    expect(decodeProtectedHeader(tokens.id_token!).alg).toBe("ES256");
    expect(tokens.token_type).toBe("bearer");
    expect(tokens.expires_in).toBeGreaterThan(3000);
    // An ordinary Tessera token: checked by HEAD /0.1/token/{t}, listed among the user's sessions.
    expect((await t.request("HEAD", `/0.1/token/${tokens.access_token}`)).status).toBe(204);
    const sessions = await t.request("GET", `/0.1/users/${alice}/sessions`, { token: admin });
    expect(sessions.json.total).toBeGreaterThanOrEqual(1);
    const info = await oidc.fetchUserInfo(config, tokens.access_token, alice);
    expect(info).toMatchObject({
      sub: alice,
      tenant_uuid: tenant,
      preferred_username: "alice",
      email: "alice@example.com",
    });
  });

  test("public client (PKCE, no secret) gets an RS256 ID token; client_secret_post works for confidential ones", async () => {
    const pub = await oidc.discovery(issuer, mobile.client_id, undefined, oidc.None(), insecure);
    let flow = await start(pub, {}, "com.example.phone:/cb");
    let back = await browserSignIn(served.url, flow.url, "alice", "alice-secret");
    expect(back.protocol).toBe("com.example.phone:");
    let tokens = await oidc.authorizationCodeGrant(pub, back, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
    });
    expect(decodeProtectedHeader(tokens.id_token!).alg).toBe("RS256");
    expect(tokens.claims()!.aud).toBe(mobile.client_id);
    const post = await oidc.discovery(
      issuer,
      other.client_id,
      undefined,
      oidc.ClientSecretPost(other.client_secret!),
      insecure,
    );
    flow = await start(post);
    back = await browserSignIn(served.url, flow.url, "alice", "alice-secret");
    tokens = await oidc.authorizationCodeGrant(post, back, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
    });
    expect(tokens.claims()!.sub).toBe(alice);
  });

  test("the login page: strict CSP, no framing, HttpOnly SameSite=Lax CSRF cookie, escaped client name, works without JavaScript", async () => {
    const config = await webClient();
    const page = await openLoginPage((await start(config)).url);
    expect(page.status).toBe(200);
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain(`form-action 'self' ${REDIRECT}`);
    expect(csp).not.toContain("script-src");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.headers.get("cache-control")).toBe("no-store");
    const cookie = page.headers.get("set-cookie")!;
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Lax");
    expect(cookie).not.toContain("Secure"); // plain http here
    expect(page.html).toContain("Sign in to Web &lt;App&gt;");
    expect(page.html).not.toContain("<script");
    expect(page.html).toContain('<label for="password">');
    // CSRF: the form without the cookie, or with another token, is refused and never redirects.
    const noCookie = await submitLogin(served.url, { ...page, cookie: "" }, "alice", "alice-secret");
    expect(noCookie.status).toBe(400);
    expect(noCookie.headers.get("location")).toBeNull();
    const forged = await submitLogin(served.url, page, "alice", "alice-secret", { csrf_token: "x".repeat(43) });
    expect(forged.status).toBe(400);
  });

  test("refusals before the client is trusted: an error page, never a redirect", async () => {
    const config = await webClient();
    const flow = await start(config);
    const variants = [
      flow.url.replace(web.client_id, crypto.randomUUID()), // unknown client
      flow.url.replace(`client_id=${web.client_id}`, "client_id=not-a-client"),
      ...[
        "https://rp.example.com/callback/",
        "https://RP.example.com/callback",
        "https://rp.example.com/callback?x=1",
        "https://rp.example.com/call",
        "https://rp.example.com/callbackx",
        "http://rp.example.com/callback",
      ].map((u) => flow.url.replace(encodeURIComponent(REDIRECT), encodeURIComponent(u))),
    ];
    for (const url of variants) {
      expect(url).not.toBe(flow.url);
      const page = await openLoginPage(url);
      expect(page.status).toBe(400);
      expect(page.headers.get("location")).toBeNull();
      expect(page.html).toContain("This sign-in cannot continue");
      expect(page.hidden).toEqual({});
    }
  });

  test("refusals sent back to the client: no PKCE for a public client, plain PKCE, other response types, unknown scopes", async () => {
    const expectError = async (url: string, error: string) => {
      const res = await fetch(url, { redirect: "manual" });
      expect(res.status).toBe(303);
      const back = new URL(res.headers.get("location")!);
      expect(back.searchParams.get("error")).toBe(error);
      expect(back.searchParams.get("state")).toBe("st");
      expect(back.searchParams.get("code")).toBeNull();
    };
    const base = `${issuer.href}/authorize?response_type=code&scope=openid&state=st`;
    const pub = `${base}&client_id=${mobile.client_id}&redirect_uri=${encodeURIComponent("com.example.phone:/cb")}`;
    await expectError(pub, "invalid_request"); // public client without PKCE
    const conf = `${base}&client_id=${web.client_id}&redirect_uri=${encodeURIComponent(REDIRECT)}`;
    await expectError(`${conf}&code_challenge=${"a".repeat(43)}&code_challenge_method=plain`, "invalid_request");
    await expectError(`${conf}&code_challenge=${"a".repeat(43)}`, "invalid_request"); // method defaults to plain
    await expectError(conf.replace("response_type=code", "response_type=token"), "unsupported_response_type");
    await expectError(conf.replace("response_type=code", "response_type=code%20id_token"), "unsupported_response_type");
    await expectError(conf.replace("scope=openid", "scope=profile"), "invalid_scope");
    await expectError(conf.replace("scope=openid", "scope=openid%20auth.%23"), "invalid_scope");
    await expectError(`${conf}&prompt=none`, "login_required");
    await expectError(`${conf}&request=eyJ`, "request_not_supported");
  });

  test("wrong password, or a user of another tenant: the form again with one generic message, no code", async () => {
    const t = get();
    const outsider = await createTenantRow(t.app);
    await createUserRow(t.app, { tenantUuid: outsider, username: "mallory", password: "mallory-secret" });
    await createUserRow(t.app, {
      tenantUuid: tenant,
      username: "disabled",
      password: "disabled-secret",
      enabled: false,
    });
    const config = await webClient();
    const page = await openLoginPage((await start(config)).url);
    const answers = [];
    for (const [user, pw] of [
      ["alice", "wrong"],
      ["nobody", "x"],
      ["mallory", "mallory-secret"],
      ["disabled", "disabled-secret"],
    ] as const) {
      const res = await submitLogin(served.url, page, user, pw);
      expect(res.status).toBe(401);
      expect(res.headers.get("location")).toBeNull();
      const html = await res.text();
      expect(html).toContain("Wrong username or password.");
      answers.push(html.replace(/nonce-[^']+'|nonce="[^"]+"|value="(mallory|alice|nobody|disabled)"/g, ""));
    }
    expect(new Set(answers).size).toBe(1);
    // mallory's login did not leave a session behind
    const sessions = await t.request("GET", "/0.1/sessions?recurse=true", {
      token: (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: outsider })).token,
    });
    expect(sessions.json.total).toBe(1); // only the token made for this check
  });

  test("token endpoint refusals: wrong secret 401 invalid_client; wrong verifier, another client's code, reused code invalid_grant (and the reuse revokes the first token)", async () => {
    const t = get();
    const config = await webClient();
    const token = (body: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(`${issuer.href}/token`, {
        method: "POST",
        body: new URLSearchParams(body),
        headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
      });
    const basic = (id: string, secret: string) => ({ Authorization: `Basic ${btoa(`${id}:${secret}`)}` });
    const codeFor = async () => {
      const flow = await start(config);
      const back = await browserSignIn(served.url, flow.url, "alice", "alice-secret");
      return { code: back.searchParams.get("code")!, verifier: flow.verifier };
    };
    const { code, verifier } = await codeFor();
    const exchange = { grant_type: "authorization_code", code, redirect_uri: REDIRECT, code_verifier: verifier };
    let r = await token(exchange, basic(web.client_id, "wrong"));
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toContain("Basic");
    expect(await r.json()).toMatchObject({ error: "invalid_client" });
    r = await token({ ...exchange, client_id: crypto.randomUUID(), client_secret: "x" });
    expect(r.status).toBe(401);
    r = await token(exchange); // no authentication at all
    expect(r.status).toBe(401);
    r = await token(
      { ...exchange, code_verifier: oidc.randomPKCECodeVerifier() },
      basic(web.client_id, web.client_secret!),
    );
    expect(await r.json()).toMatchObject({ error: "invalid_grant" });
    r = await token({ ...exchange, code_verifier: "" }, basic(web.client_id, web.client_secret!));
    expect(await r.json()).toMatchObject({ error: "invalid_grant" });
    r = await token({ ...exchange, redirect_uri: `${REDIRECT}/` }, basic(web.client_id, web.client_secret!));
    expect(await r.json()).toMatchObject({ error: "invalid_grant" });
    r = await token(exchange, basic(other.client_id, other.client_secret!));
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ error: "invalid_grant" });
    r = await token(
      { ...exchange, grant_type: "password", username: "alice", password: "alice-secret" },
      basic(web.client_id, web.client_secret!),
    );
    expect(await r.json()).toMatchObject({ error: "unsupported_grant_type" });
    // The failures spent nothing: the right exchange works once…
    r = await token(exchange, basic(web.client_id, web.client_secret!));
    expect(r.status).toBe(200);
    expect(r.headers.get("cache-control")).toBe("no-store");
    const first = (await r.json()) as { access_token: string };
    expect((await t.request("HEAD", `/0.1/token/${first.access_token}`)).status).toBe(204);
    // …and its replay fails and revokes what the first exchange issued (RFC 6749 §4.1.2).
    r = await token(exchange, basic(web.client_id, web.client_secret!));
    expect(await r.json()).toMatchObject({ error: "invalid_grant" });
    expect((await t.request("HEAD", `/0.1/token/${first.access_token}`)).status).toBe(404);
    // An expired code fails too.
    const late = await codeFor();
    await t.app.db.update(oidcCodes).set({ expiresAt: new Date(Date.now() - 1000) });
    r = await token(
      { ...exchange, code: late.code, code_verifier: late.verifier },
      basic(web.client_id, web.client_secret!),
    );
    expect(await r.json()).toMatchObject({ error: "invalid_grant" });
  });

  test("userinfo refuses a plain Tessera token, garbage, and no token", async () => {
    const t = get();
    const plain = (await tokenFor(t.app, { acl: ["#"], tenantUuid: tenant, userUuid: alice })).token;
    for (const auth of [`Bearer ${plain}`, "Bearer garbage", "Bearer " + crypto.randomUUID(), ""]) {
      const r = await fetch(`${issuer.href}/userinfo`, { headers: auth ? { Authorization: auth } : {} });
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toContain("Bearer");
    }
  });
});

/** The introspection answer as plain JSON (openid-client brands its type). */
const introspect = async (config: oidc.Configuration, token: string): Promise<Record<string, unknown>> => ({
  ...(await oidc.tokenIntrospection(config, token)),
});

describeEachDb("OpenID Connect introspection and revocation", (get) => {
  let served: ServedApp;
  let issuer: URL;
  let tenant: string;
  let bob: string;
  let rp: Registered;
  let rp2: Registered;
  let pub: Registered;
  let foreign: Registered;

  beforeAll(async () => {
    const t = get();
    served = serveApp(t);
    issuer = new URL(`${served.url}/0.1/oidc`);
    tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    bob = await createUserRow(t.app, { tenantUuid: tenant, username: "bob", password: "bob-secret" });
    const reg = async (body: Record<string, unknown>, token = admin) =>
      (
        await t.request("POST", "/0.1/oidc/clients", {
          token,
          body: { name: "rp", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true, ...body },
        })
      ).json as Registered;
    rp = await reg({});
    rp2 = await reg({});
    pub = await reg({ client_type: "public" });
    const elsewhere = await createTenantRow(t.app);
    foreign = await reg({}, (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: elsewhere })).token);
  });
  afterAll(() => served?.stop());

  async function signedIn(client: Registered): Promise<{ config: oidc.Configuration; access: string }> {
    const config = await oidc.discovery(
      issuer,
      client.client_id,
      undefined,
      oidc.ClientSecretBasic(client.client_secret!),
      insecure,
    );
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: "openid",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    });
    const back = await browserSignIn(served.url, url.toString(), "bob", "bob-secret");
    const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier });
    return { config, access: tokens.access_token };
  }

  test("openid-client introspects its access token and any Tessera token of its tenant; other tenants' tokens are inactive", async () => {
    const t = get();
    const { config, access } = await signedIn(rp);
    const info = await introspect(config, access);
    expect(info).toMatchObject({
      active: true,
      sub: bob,
      client_id: rp.client_id,
      scope: "openid",
      tenant_uuid: tenant,
      iss: issuer.href,
      token_type: "Bearer",
    });
    expect(info.exp).toBeGreaterThan(Date.now() / 1000);
    const plain = (await tokenFor(t.app, { acl: ["confd.#"], tenantUuid: tenant, userUuid: bob })).token;
    expect(await introspect(config, plain)).toMatchObject({ active: true, sub: bob });
    const other = (await tokenFor(t.app, { acl: [], tenantUuid: await createTenantRow(t.app) })).token;
    expect(await introspect(config, other)).toEqual({ active: false });
    expect(await introspect(config, crypto.randomUUID())).toEqual({ active: false });
    expect(await introspect(config, "garbage")).toEqual({ active: false });
    // A client of another tenant learns nothing about this tenant's tokens.
    const foreignConfig = await oidc.discovery(
      issuer,
      foreign.client_id,
      undefined,
      oidc.ClientSecretPost(foreign.client_secret!),
      insecure,
    );
    expect(await introspect(foreignConfig, access)).toEqual({ active: false });
  });

  test("introspection without client authentication, or by a public client: 401 invalid_client with WWW-Authenticate", async () => {
    const { access } = await signedIn(rp);
    for (const body of [
      { token: access },
      { token: access, client_id: pub.client_id },
      { token: access, client_id: rp.client_id, client_secret: "wrong" },
    ] as Record<string, string>[]) {
      const r = await fetch(`${issuer.href}/introspect`, { method: "POST", body: new URLSearchParams(body) });
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toContain("Basic");
      expect(await r.json()).toMatchObject({ error: "invalid_client" });
    }
  });

  test("revocation (RFC 7009): a client revokes its own token (its session ends); another client's token or a plain one stays", async () => {
    const t = get();
    const mine = await signedIn(rp);
    const theirs = await signedIn(rp2);
    const plain = (await tokenFor(t.app, { acl: [], tenantUuid: tenant, userUuid: bob })).token;
    for (const token of [theirs.access, plain, crypto.randomUUID(), "garbage"])
      await oidc.tokenRevocation(mine.config, token);
    for (const token of [theirs.access, plain])
      expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(204);
    await oidc.tokenRevocation(mine.config, mine.access);
    expect((await t.request("HEAD", `/0.1/token/${mine.access}`)).status).toBe(404);
    expect(await introspect(mine.config, mine.access)).toEqual({ active: false });
  });
});
