// Pushed authorization requests (RFC 9126) and request objects (RFC 9101), driven by openid-client
// 6 (buildAuthorizationUrlWithPAR, buildAuthorizationUrlWithJAR) against the app over real HTTP, a
// client's jwks_uri served by the test, and every refusal at the HTTP level.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import * as oidc from "openid-client";
import { oidcPushedRequests } from "../../src/db/schema.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import {
  discoverClient,
  insecure,
  serveApp,
  startAuthorization,
  TestBrowser,
  type ServedApp,
} from "../helpers/oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
const OUTBOUND = { outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true } };

interface Registered {
  client_id: string;
  client_secret: string;
}

describeEachDb(
  "OIDC pushed authorization requests and request objects",
  (get) => {
    let served: ServedApp;
    let issuer: URL;
    let admin: string;
    let web: Registered;
    let other: Registered;
    let strict: Registered;
    let signer: Registered;
    let remote: Registered;
    let key: CryptoKey;
    let foreignKey: CryptoKey;
    let jwksServer: ReturnType<typeof Bun.serve>;
    let jwksHits = 0;

    const register = async (body: Record<string, unknown> = {}): Promise<Registered> => {
      const r = await get().request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: { name: "rp", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true, ...body },
      });
      if (r.status !== 201) throw new Error(r.text);
      return r.json;
    };
    const basic = (c: Registered) => `Basic ${btoa(`${c.client_id}:${c.client_secret}`)}`;
    const push = (form: Record<string, string>, client: Registered | null = web) =>
      fetch(`${issuer}/par`, {
        method: "POST",
        headers: {
          "Content-Type": "application/x-www-form-urlencoded",
          ...(client ? { Authorization: basic(client) } : {}),
        },
        body: new URLSearchParams(form),
      });
    const pkce = async () => {
      const verifier = oidc.randomPKCECodeVerifier();
      return { verifier, challenge: await oidc.calculatePKCECodeChallenge(verifier) };
    };
    const requestForm = async (extra: Record<string, string> = {}) => ({
      redirect_uri: REDIRECT,
      response_type: "code",
      scope: "openid profile",
      state: "s1",
      code_challenge: (await pkce()).challenge,
      code_challenge_method: "S256",
      ...extra,
    });

    beforeAll(async () => {
      const t = get();
      served = serveApp(t);
      issuer = new URL(`${served.url}/0.1/oidc`);
      const tenant = await createTenantRow(t.app);
      admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      await createUserRow(t.app, { tenantUuid: tenant, username: "dave", password: "dave-secret" });
      const pair = await generateKeyPair("ES256", { extractable: true });
      key = pair.privateKey;
      foreignKey = (await generateKeyPair("ES256")).privateKey;
      const jwk = { ...(await exportJWK(pair.publicKey)), kid: "k1", use: "sig", alg: "ES256" };
      jwksServer = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: () => {
          jwksHits++;
          return Response.json({ keys: [jwk] });
        },
      });
      web = await register();
      other = await register();
      strict = await register({ require_pushed_authorization_requests: true });
      signer = await register({ jwks: { keys: [jwk] } });
      remote = await register({ jwks_uri: `http://127.0.0.1:${jwksServer.port}/jwks` });
    });
    afterAll(async () => {
      await served?.stop();
      jwksServer?.stop(true);
    });

    /** Signs dave in through the page: the redirect back to the client. */
    const signIn = async (url: string) => {
      const browser = new TestBrowser(served.url);
      const back = await browser.signIn(url, "dave", "dave-secret");
      expect(back.res.status).toBe(303);
      return { back: back.location!, browser };
    };

    test("discovery: the PAR endpoint, require_pushed_authorization_requests, request objects", async () => {
      const meta = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as Record<
        string,
        unknown
      >;
      expect(meta.pushed_authorization_request_endpoint).toBe(`${issuer.href}/par`);
      expect(meta.require_pushed_authorization_requests).toBe(false);
      expect(meta.request_parameter_supported).toBe(true);
      expect(meta.request_object_signing_alg_values_supported).toContain("ES256");
      expect(meta.request_object_signing_alg_values_supported).not.toContain("none");
    });

    test("openid-client pushes the request; the browser carries only client_id and request_uri; one code, then spent", async () => {
      const t = get();
      const config = await discoverClient(issuer, web);
      const verifier = oidc.randomPKCECodeVerifier();
      const url = await oidc.buildAuthorizationUrlWithPAR(config, {
        redirect_uri: REDIRECT,
        scope: "openid profile",
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        state: "par-state",
      });
      expect([...url.searchParams.keys()].sort()).toEqual(["client_id", "request_uri"]);
      expect(url.searchParams.get("request_uri")).toStartWith("urn:ietf:params:oauth:request_uri:");
      const { back, browser } = await signIn(url.href);
      expect(back.searchParams.get("state")).toBe("par-state");
      const tokens = await oidc.authorizationCodeGrant(config, back, {
        pkceCodeVerifier: verifier,
        expectedState: "par-state",
      });
      expect(tokens.claims()!.aud).toBe(web.client_id);
      // Single use: the same request_uri again (even with the session) is refused.
      const again = await browser.get(url.href);
      expect(again.res.status).toBe(400);
      expect(again.html).toContain("expired or was already used");
      const rows = await t.app.db
        .select()
        .from(oidcPushedRequests)
        .where(eq(oidcPushedRequests.clientId, web.client_id));
      expect(rows.length).toBe(0);
    });

    test("a request_uri is bound to its client, unknown ones and plain URLs are refused, parameters outside it do not count", async () => {
      const pushed = (await (await push(await requestForm())).json()) as { request_uri: string; expires_in: number };
      expect(pushed.expires_in).toBeGreaterThan(0);
      const at = (clientId: string, uri: string, extra = "") =>
        `${issuer}/authorize?client_id=${clientId}&request_uri=${encodeURIComponent(uri)}${extra}`;
      const browser = new TestBrowser(served.url);
      const foreign = await browser.get(at(other.client_id, pushed.request_uri));
      expect(foreign.res.status).toBe(400);
      expect((await browser.get(at(web.client_id, `${pushed.request_uri}x`))).res.status).toBe(400);
      expect((await browser.get(at(web.client_id, "https://rp.example.com/request.jwt"))).res.status).toBe(400);
      // An outer redirect_uri is ignored: the login form posts back the pushed one, and the code goes there.
      const ok = await browser.get(
        at(web.client_id, pushed.request_uri, "&redirect_uri=https%3A%2F%2Fevil.example%2F"),
      );
      expect(ok.res.status).toBe(200);
      const signed = await browser.signIn(at(web.client_id, pushed.request_uri), "dave", "dave-secret");
      expect(signed.location!.origin).toBe("https://rp.example.com");
    });

    test("a pushed request not opened within expires_in is refused; once opened, the user has time to sign in", async () => {
      const t = get();
      const late = (await (await push(await requestForm())).json()) as { request_uri: string };
      await t.app.db.update(oidcPushedRequests).set({ expiresAt: new Date(Date.now() - 1000) });
      const at = (uri: string) =>
        `${issuer}/authorize?client_id=${web.client_id}&request_uri=${encodeURIComponent(uri)}`;
      expect((await new TestBrowser(served.url).get(at(late.request_uri))).res.status).toBe(400);
      const fresh = (await (await push(await requestForm())).json()) as { request_uri: string };
      const browser = new TestBrowser(served.url);
      expect((await browser.get(at(fresh.request_uri))).res.status).toBe(200);
      const [row] = (await t.app.db.select().from(oidcPushedRequests)).filter(
        (r) => r.opened && r.expiresAt.getTime() > Date.now(),
      );
      expect(row!.expiresAt.getTime() - Date.now()).toBeGreaterThan(600_000);
    });

    test("PAR refusals: client authentication, request_uri pushed, the authorization endpoint's own checks", async () => {
      const expectError = async (res: Response, status: number, error: string) => {
        const body = (await res.json()) as { error: string; error_description: string };
        expect({ status: res.status, error: body.error }).toEqual({ status, error });
        expect(body.error_description).toBeString();
      };
      await expectError(await push(await requestForm(), null), 401, "invalid_client");
      await expectError(
        await push(await requestForm(), { client_id: web.client_id, client_secret: "wrong" }),
        401,
        "invalid_client",
      );
      await expectError(await push(await requestForm({ request_uri: "urn:x" })), 400, "invalid_request");
      await expectError(
        await push(await requestForm({ redirect_uri: "https://evil.example/cb" })),
        400,
        "invalid_request",
      );
      await expectError(await push(await requestForm({ scope: "profile" })), 400, "invalid_scope");
      await expectError(await push(await requestForm({ response_type: "token" })), 400, "unsupported_response_type");
      await expectError(await push(await requestForm({ code_challenge_method: "plain" })), 400, "invalid_request");
      await expectError(await push(await requestForm({ prompt: "none login" })), 400, "invalid_request");
      // client_secret_post: the secret authenticates and is never kept with the request.
      const posted = await push(
        { ...(await requestForm()), client_id: web.client_id, client_secret: web.client_secret },
        null,
      );
      expect(posted.status).toBe(201);
      const rows = await get().app.db.select().from(oidcPushedRequests);
      expect(JSON.stringify(rows)).not.toContain(web.client_secret);
      // Another client's id in the form than the one authenticated.
      await expectError(await push({ ...(await requestForm()), client_id: other.client_id }), 400, "invalid_request");
    });

    test("require_pushed_authorization_requests: a plain request is refused back to the client; a pushed one passes", async () => {
      const config = await discoverClient(issuer, strict);
      const plain = await startAuthorization(config, REDIRECT);
      const refused = await new TestBrowser(served.url).get(plain.url);
      expect(refused.res.status).toBe(303);
      expect(refused.location!.searchParams.get("error")).toBe("invalid_request");
      expect(refused.location!.searchParams.get("error_description")).toContain("pushed");
      const url = await oidc.buildAuthorizationUrlWithPAR(config, {
        redirect_uri: REDIRECT,
        scope: "openid",
        code_challenge: (await pkce()).challenge,
        code_challenge_method: "S256",
      });
      const { back } = await signIn(url.href);
      expect(back.searchParams.get("code")).toBeString();
      const view = await get().request("GET", `/0.1/oidc/clients/${strict.client_id}`, { token: admin });
      expect(view.json.require_pushed_authorization_requests).toBe(true);
    });

    test("openid-client's signed request object (jwks by value): verified, its parameters used", async () => {
      const config = await discoverClient(issuer, signer);
      const verifier = oidc.randomPKCECodeVerifier();
      const url = await oidc.buildAuthorizationUrlWithJAR(
        config,
        {
          redirect_uri: REDIRECT,
          scope: "openid profile",
          code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
          code_challenge_method: "S256",
          state: "jar-state",
          nonce: "jar-nonce",
        },
        { key, kid: "k1" },
      );
      expect([...url.searchParams.keys()].sort()).toEqual(["client_id", "request"]);
      const { back } = await signIn(url.href);
      const tokens = await oidc.authorizationCodeGrant(config, back, {
        pkceCodeVerifier: verifier,
        expectedState: "jar-state",
        expectedNonce: "jar-nonce",
      });
      expect(tokens.claims()!.nonce).toBe("jar-nonce");
    });

    test("request objects by jwks_uri (through the outbound guard), and inside a pushed request", async () => {
      const config = await discoverClient(issuer, remote);
      const verifier = oidc.randomPKCECodeVerifier();
      const params = {
        redirect_uri: REDIRECT,
        scope: "openid",
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        state: "remote",
      };
      const url = await oidc.buildAuthorizationUrlWithJAR(config, params, { key, kid: "k1" });
      const { back } = await signIn(url.href);
      expect(jwksHits).toBeGreaterThan(0);
      const tokens = await oidc.authorizationCodeGrant(config, back, {
        pkceCodeVerifier: verifier,
        expectedState: "remote",
      });
      expect(tokens.access_token).toBeString();
      // A request object pushed (RFC 9126 §3): verified at the push, expanded into the stored request.
      const jwt = await new SignJWT({ ...params, response_type: "code", client_id: remote.client_id })
        .setProtectedHeader({ alg: "ES256", kid: "k1" })
        .setIssuer(remote.client_id)
        .setAudience(issuer.href)
        .setIssuedAt()
        .setExpirationTime("1m")
        .sign(key);
      const pushed = await push({ request: jwt }, remote);
      expect({ status: pushed.status, body: await pushed.json() }).toMatchObject({ status: 201 });
      const bad = await push({ request: jwt.slice(0, -4) + "AAAA" }, remote);
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: string }).error).toBe("invalid_request_object");
    });

    test("request object refusals: no registered keys → request_not_supported; wrong key, none, wrong aud or client → invalid_request_object", async () => {
      const claims = async (extra: Record<string, unknown> = {}) => ({
        ...(await requestForm()),
        client_id: signer.client_id,
        ...extra,
      });
      const sign = async (payload: Record<string, unknown>, k: CryptoKey = key, aud = issuer.href) =>
        new SignJWT(payload)
          .setProtectedHeader({ alg: "ES256", kid: "k1" })
          .setAudience(aud)
          .setIssuedAt()
          .setExpirationTime("1m")
          .sign(k);
      const open = (clientId: string, request: string, outer = "") =>
        new TestBrowser(served.url).get(
          `${issuer}/authorize?client_id=${clientId}&request=${encodeURIComponent(request)}${outer}`,
        );
      // A client without keys: refused, back to its registered outer redirect_uri (never ignored).
      const noKeys = await open(
        web.client_id,
        await sign(await claims({ client_id: web.client_id })),
        `&redirect_uri=${encodeURIComponent(REDIRECT)}&state=st`,
      );
      expect(noKeys.res.status).toBe(303);
      expect(noKeys.location!.searchParams.get("error")).toBe("request_not_supported");
      expect(noKeys.location!.searchParams.get("state")).toBe("st");
      // Without an outer redirect URI, an error page (nothing verified to redirect to).
      const page = await open(web.client_id, await sign(await claims({ client_id: web.client_id })));
      expect(page.res.status).toBe(400);
      const pushedNoKeys = await push({ request: await sign(await claims({ client_id: web.client_id })) });
      expect(((await pushedNoKeys.json()) as { error: string }).error).toBe("request_not_supported");

      const refusals: [string, string][] = [
        ["another key", await sign(await claims(), foreignKey)],
        ["another audience", await sign(await claims(), key, "https://other-provider.example")],
        ["another client", await sign(await claims({ client_id: web.client_id }))],
        ["another issuer", await sign(await claims({ iss: web.client_id }))],
        ["nested request_uri", await sign(await claims({ request_uri: "urn:x" }))],
        [
          "alg none",
          `${Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url")}.${Buffer.from(JSON.stringify(await claims())).toString("base64url")}.`,
        ],
        ["encrypted", "a.b.c.d.e"],
        ["not a JWT", "garbage"],
      ];
      for (const [what, jwt] of refusals) {
        const r = await push({ request: jwt }, signer);
        const body = (await r.json()) as { error: string };
        expect({ what, status: r.status, error: body.error }).toEqual({
          what,
          status: 400,
          error: "invalid_request_object",
        });
        const outer = await open(signer.client_id, jwt, `&redirect_uri=${encodeURIComponent(REDIRECT)}`);
        expect({ what, error: outer.location?.searchParams.get("error") }).toEqual({
          what,
          error: "invalid_request_object",
        });
      }
    });

    test("administration: a jwks_uri the outbound guard refuses, or jwks with a private key, is a 400; PUT keeps or clears", async () => {
      const t = get();
      const bad = async (body: Record<string, unknown>, field: string) => {
        const r = await t.request("POST", "/0.1/oidc/clients", {
          token: admin,
          body: { name: "x", client_type: "confidential", redirect_uris: [REDIRECT], ...body },
        });
        expect(r.status).toBe(400);
        expect(Object.keys(r.json.details)).toContain(field);
      };
      await bad({ jwks_uri: "http://10.0.0.1/jwks" }, "jwks_uri");
      await bad({ jwks_uri: "ftp://rp.example.com/jwks" }, "jwks_uri");
      await bad({ jwks: { keys: [{ kty: "RSA", n: "x", e: "AQAB", d: "secret" }] } }, "jwks");
      await bad({ jwks: { keys: [{ kty: "EC" }] }, jwks_uri: "https://rp.example.com/jwks" }, "jwks_uri");
      // PUT without the keys keeps them (and require_pushed_authorization_requests); null clears them.
      const path = `/0.1/oidc/clients/${signer.client_id}`;
      const base = { name: "rp", redirect_uris: [REDIRECT], first_party: true };
      expect((await t.request("PUT", path, { token: admin, body: base })).status).toBe(204);
      const kept = (await t.request("GET", path, { token: admin })).json;
      expect(kept.jwks.keys[0].kid).toBe("k1");
      expect(kept.require_pushed_authorization_requests).toBe(false);
      const strictPath = `/0.1/oidc/clients/${strict.client_id}`;
      expect((await t.request("PUT", strictPath, { token: admin, body: base })).status).toBe(204);
      expect((await t.request("GET", strictPath, { token: admin })).json.require_pushed_authorization_requests).toBe(
        true,
      );
      expect((await t.request("PUT", path, { token: admin, body: { ...base, jwks: null } })).status).toBe(204);
      expect((await t.request("GET", path, { token: admin })).json.jwks).toBeNull();
    });
  },
  { config: OUTBOUND },
);
