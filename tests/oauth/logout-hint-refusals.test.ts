// The RP-Initiated Logout conformance plan's refusals (RP-Initiated Logout 1.0 §2, §3): an
// `id_token_hint` modified after signing, signed by someone else, `alg: none`, of another issuer or
// for another client, and a `post_logout_redirect_uri` with a query added or changed — each an error
// page, never a redirect, and nobody signed out.
import { beforeAll, afterAll, expect, test } from "bun:test";
import { generateKeyPair, SignJWT } from "jose";
import * as oidc from "openid-client";
import { signingKey } from "../../src/services/oidc/keys.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { discoverClient, serveApp, startAuthorization, TestBrowser, type ServedApp } from "../helpers/oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
const LOGOUT_TO = "https://rp.example.com/signed-out?from=tessera";

describeEachDb("RP-initiated logout refusals", (get) => {
  let served: ServedApp;
  let issuer: string;
  let grafana: { client_id: string; client_secret: string; config: oidc.Configuration };
  let wiki: { client_id: string; client_secret: string; config: oidc.Configuration };
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    const t = get();
    served = serveApp(t);
    issuer = `${served.url}/0.1/oidc`;
    const tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    alice = await createUserRow(t.app, { tenantUuid: tenant, username: "alice", password: "alice-secret" });
    bob = await createUserRow(t.app, { tenantUuid: tenant, username: "bob", password: "bob-secret" });
    const register = async (name: string) => {
      const r = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: {
          name,
          client_type: "confidential",
          redirect_uris: [REDIRECT],
          post_logout_redirect_uris: [LOGOUT_TO],
          first_party: true,
        },
      });
      return { ...r.json, config: await discoverClient(new URL(issuer), r.json) };
    };
    grafana = await register("Grafana");
    wiki = await register("Wiki");
  });
  afterAll(() => served?.stop());

  async function signedIn() {
    const browser = new TestBrowser(served.url);
    const flow = await startAuthorization(grafana.config, REDIRECT);
    const back = (await browser.signIn(flow.url, "alice", "alice-secret")).location!;
    const tokens = await oidc.authorizationCodeGrant(grafana.config, back, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
    });
    return { browser, tokens };
  }

  const logoutUrl = (p: Record<string, string>) => `${issuer}/logout?${new URLSearchParams(p)}`;

  /** Refused: a 400 error page, no redirect, the browser still signed in and its token alive. */
  async function expectRefused(browser: TestBrowser, accessToken: string, p: Record<string, string>) {
    const r = await browser.get(logoutUrl(p));
    expect({ status: r.res.status, location: r.location?.href ?? null }).toEqual({ status: 400, location: null });
    expect(r.html).toContain('role="alert"');
    expect((await get().request("HEAD", `/0.1/token/${accessToken}`)).status).toBe(204);
    const silent = await browser.get((await startAuthorization(grafana.config, REDIRECT, { prompt: "none" })).url);
    expect(silent.location!.searchParams.get("code")).toBeTruthy();
  }

  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");

  test("a hint modified after signing: another sub, another aud, a later exp, another sid — refused", async () => {
    const { browser, tokens } = await signedIn();
    const [h, p, s] = tokens.id_token!.split(".");
    const claims = JSON.parse(Buffer.from(p!, "base64url").toString());
    for (const change of [
      { sub: bob },
      { aud: wiki.client_id },
      { exp: claims.exp + 3600 },
      { sid: crypto.randomUUID() },
    ]) {
      const modified = `${h}.${b64({ ...claims, ...change })}.${s}`;
      await expectRefused(browser, tokens.access_token, {
        id_token_hint: modified,
        post_logout_redirect_uri: LOGOUT_TO,
      });
    }
    // The header modified (alg: none, signature dropped).
    await expectRefused(browser, tokens.access_token, {
      id_token_hint: `${b64({ alg: "none", typ: "JWT" })}.${p}.`,
      post_logout_redirect_uri: LOGOUT_TO,
    });
  });

  test("a foreign hint: signed by another key under our kid, or by our key for another issuer — refused", async () => {
    const t = get();
    const { browser, tokens } = await signedIn();
    const ours = await signingKey(t.app, "ES256");
    const { privateKey } = await generateKeyPair("ES256");
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: alice, aud: grafana.client_id, iat: now, exp: now + 600 };
    const foreignKey = await new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256", kid: ours.kid })
      .setIssuer(issuer)
      .sign(privateKey);
    await expectRefused(browser, tokens.access_token, {
      id_token_hint: foreignKey,
      post_logout_redirect_uri: LOGOUT_TO,
    });
    const foreignIssuer = await new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256", kid: ours.kid })
      .setIssuer("https://idp.example.net/")
      .sign(ours.privateKey);
    await expectRefused(browser, tokens.access_token, {
      id_token_hint: foreignIssuer,
      post_logout_redirect_uri: LOGOUT_TO,
    });
    // Our own hint, for another client than the one named.
    await expectRefused(browser, tokens.access_token, {
      id_token_hint: tokens.id_token!,
      client_id: wiki.client_id,
      post_logout_redirect_uri: LOGOUT_TO,
    });
  });

  test("a post_logout_redirect_uri with a query added or changed, or another path — refused; the registered one redirects", async () => {
    const { browser, tokens } = await signedIn();
    for (const uri of [
      `${LOGOUT_TO}&x=1`,
      LOGOUT_TO.replace("?from=tessera", "?from=tessera&from=evil"),
      LOGOUT_TO.replace("?from=tessera", "?from=other"),
      LOGOUT_TO.replace("?from=tessera", ""),
      LOGOUT_TO.replace("?from=tessera", "/?from=tessera"),
      `${LOGOUT_TO}#frag`,
    ]) {
      await expectRefused(browser, tokens.access_token, {
        id_token_hint: tokens.id_token!,
        post_logout_redirect_uri: uri,
      });
    }
    const ok = await browser.get(
      logoutUrl({ id_token_hint: tokens.id_token!, post_logout_redirect_uri: LOGOUT_TO, state: "st" }),
    );
    expect(ok.res.status).toBe(303);
    expect(ok.location!.href).toBe(`${LOGOUT_TO}&state=st`);
    expect((await get().request("HEAD", `/0.1/token/${tokens.access_token}`)).status).toBe(404);
  });
});
