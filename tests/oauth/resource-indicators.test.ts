// RFC 8707 resource indicators across the code flow (§2.1: the resource indicated in the
// authorization request is the one the code's token is for) and opaque resource servers (their
// `acl` and `access_token_lifetime` apply to Tessera's opaque token as to a JWT), driven by panva's
// openid-client.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createRemoteJWKSet, jwtVerify } from "jose";
import * as oidc from "openid-client";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { browserSignIn, serveApp, type ServedApp } from "../helpers/oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
const CALLD = "https://calld.example.com";
const OPAQUE = "https://legacy.example.com";
const insecure = { execute: [oidc.allowInsecureRequests] };

interface Registered {
  client_id: string;
  client_secret: string;
}

async function oauthError(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (e) {
    const err = e as { error?: string; cause?: { error?: string } };
    return err.error ?? err.cause?.error;
  }
  throw new Error("expected a refusal");
}

describeEachDb("RFC 8707 resource indicators: the code flow and opaque resources", (get) => {
  let served: ServedApp;
  let issuer: URL;
  let admin: string;
  let web: Registered;
  let service: Registered;
  let jwks: ReturnType<typeof createRemoteJWKSet>;

  const register = async (body: Record<string, unknown>): Promise<Registered> => {
    const r = await get().request("POST", "/0.1/oidc/clients", {
      token: admin,
      body: { name: "rp", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true, ...body },
    });
    if (r.status !== 201) throw new Error(r.text);
    return r.json;
  };
  const configOf = (c: Registered) =>
    oidc.discovery(issuer, c.client_id, undefined, oidc.ClientSecretBasic(c.client_secret), insecure);
  const head = async (token: string, query = "") => (await get().request("HEAD", `/0.1/token/${token}${query}`)).status;

  /** An authorization URL with PKCE, `extra` added (e.g. `resource`). */
  const authorization = async (config: oidc.Configuration, extra: Record<string, string>) => {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: "openid profile",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      ...extra,
    });
    return { url: url.toString(), verifier, state };
  };

  beforeAll(async () => {
    const t = get();
    served = serveApp(t);
    issuer = new URL(`${served.url}/0.1/oidc`);
    jwks = createRemoteJWKSet(new URL(`${issuer.href}/jwks`));
    const tenant = await createTenantRow(t.app);
    const root = (await tokenFor(t.app, { acl: ["#"] })).token;
    admin = (await tokenFor(t.app, { acl: ["auth.#", "confd.#", "calld.#"], tenantUuid: tenant })).token;
    const alice = await createUserRow(t.app, { tenantUuid: tenant, username: "alice", password: "alice-secret" });
    const policy = await t.request("POST", "/0.1/policies", {
      token: root,
      tenant,
      body: { name: "alice-policy", acl: ["confd.#", "calld.calls.read", "amid.#"] },
    });
    await t.request("PUT", `/0.1/users/${alice}/policies/${policy.json.uuid}`, { token: root, tenant });
    web = await register({ name: "Web", scopes: ["openid", "profile"] });
    service = await register({
      name: "Daemon",
      redirect_uris: [],
      grant_types: ["client_credentials"],
      acl: ["calld.#", "confd.users.read"],
    });
    for (const body of [
      { identifier: CALLD, acl: ["calld.#", "confd.users.*.read"], token_format: "jwt", access_token_lifetime: 120 },
      { identifier: OPAQUE, acl: ["calld.#", "confd.users.*.read"], token_format: "opaque", access_token_lifetime: 90 },
    ]) {
      const r = await t.request("POST", "/0.1/oidc/resources", { token: admin, body });
      expect(r.status).toBe(201);
    }
  });
  afterAll(() => served?.stop());

  test("§2.1: the resource of the authorization request is the code's; absent at the token request means it", async () => {
    const config = await configOf(web);
    const a = await authorization(config, { resource: CALLD });
    const back = await browserSignIn(served.url, a.url, "alice", "alice-secret");
    const tokens = await oidc.authorizationCodeGrant(config, back, {
      pkceCodeVerifier: a.verifier,
      expectedState: a.state,
    });
    const { payload, protectedHeader } = await jwtVerify(tokens.access_token, jwks, {
      issuer: issuer.href,
      audience: CALLD,
    });
    expect(protectedHeader.typ).toBe("at+jwt");
    expect((payload.acl as string[]).sort()).toEqual(["calld.calls.read", "confd.users.*.read"]);
  });

  test("§2.1: a token request naming another resource than the authorized one is invalid_target, the code unspent", async () => {
    const config = await configOf(web);
    const a = await authorization(config, { resource: CALLD });
    const back = await browserSignIn(served.url, a.url, "alice", "alice-secret");
    for (const resource of [OPAQUE, `${served.url}/0.1`])
      expect(
        await oauthError(
          oidc.authorizationCodeGrant(
            config,
            back,
            { pkceCodeVerifier: a.verifier, expectedState: a.state },
            { resource },
          ),
        ),
      ).toBe("invalid_target");
    // Naming the authorized one (MCP clients send it at both requests): the code still works.
    const tokens = await oidc.authorizationCodeGrant(
      config,
      back,
      { pkceCodeVerifier: a.verifier, expectedState: a.state },
      { resource: CALLD },
    );
    expect((await jwtVerify(tokens.access_token, jwks, { audience: CALLD })).payload.sub).toBeString();
  });

  test("an unknown resource at the authorization endpoint goes back to the client as invalid_target", async () => {
    const config = await configOf(web);
    const a = await authorization(config, { resource: "https://nowhere.example.com" });
    const r = await fetch(a.url, { redirect: "manual" });
    expect([302, 303]).toContain(r.status);
    const location = new URL(r.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get("error")).toBe("invalid_target");
    expect(location.searchParams.get("state")).toBe(a.state);
  });

  test("a pushed request's resource is remembered too (RFC 9126 with RFC 8707)", async () => {
    const config = await configOf(web);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = await oidc.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: REDIRECT,
      scope: "openid",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      resource: OPAQUE,
    });
    const back = await browserSignIn(served.url, url.toString(), "alice", "alice-secret");
    const tokens = await oidc.authorizationCodeGrant(config, back, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    // The opaque resource's token: narrowed to its ACL, within its lifetime.
    expect(tokens.access_token).toMatch(/^[0-9a-f-]{36}$/);
    expect(tokens.expires_in).toBeLessThanOrEqual(90);
    expect(await head(tokens.access_token, "?scope=calld.calls.read")).toBe(204);
    expect(await head(tokens.access_token, "?scope=confd.users.1.read")).toBe(204);
    expect(await head(tokens.access_token, "?scope=amid.action")).toBe(403);
    expect(await head(tokens.access_token, "?scope=confd.users.1.update")).toBe(403);
  });

  test("an opaque resource's acl narrows the client's token (entries both hold) and its lifetime bounds it", async () => {
    const config = await configOf(service);
    const tokens = await oidc.clientCredentialsGrant(config, { resource: OPAQUE });
    expect(tokens.access_token).toMatch(/^[0-9a-f-]{36}$/);
    expect(tokens.expires_in).toBeLessThanOrEqual(90);
    expect(await head(tokens.access_token, "?scope=calld.calls.read")).toBe(204);
    // The client's confd.users.read is not one of the resource's confd.users.*.read strings.
    expect(await head(tokens.access_token, "?scope=confd.users.read")).toBe(403);
    const read = await get().request("GET", `/0.1/token/${tokens.access_token}`);
    expect(read.status).toBe(200);
    expect(read.json.data.acl).toEqual(["calld.#"]);
    const lifetime = Date.parse(read.json.data.expires_at) - Date.parse(read.json.data.issued_at);
    expect(lifetime).toBeLessThanOrEqual(91_000); // issued_at is to the second
    // Without resource, the client's own wider token, as before.
    const plain = await oidc.clientCredentialsGrant(config);
    expect(await head(plain.access_token, "?scope=confd.users.read")).toBe(204);
  });
});
