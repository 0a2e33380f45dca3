// Access tokens for resource servers (RFC 8707 `resource`, RFC 9068 JWT access tokens), driven by
// panva's openid-client at the token endpoint and verified as a resource server would, offline,
// with jose's jwtVerify against Tessera's JWKS (createRemoteJWKSet); then checked by Tessera itself
// (HEAD and GET /0.1/token, introspection, userinfo) and revoked.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
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

async function oauthError(p: Promise<unknown>): Promise<{ error?: string; status?: number }> {
  try {
    await p;
  } catch (e) {
    const err = e as { error?: string; status?: number; cause?: { error?: string } };
    return { error: err.error ?? err.cause?.error, status: err.status };
  }
  throw new Error("expected a refusal");
}

describeEachDb("RFC 9068 JWT access tokens for registered resource servers", (get) => {
  let served: ServedApp;
  let issuer: URL;
  let tenant: string;
  let admin: string;
  let otherAdmin: string;
  let alice: string;
  let web: Registered;
  let service: Registered;
  let foreign: Registered;
  let jwks: ReturnType<typeof createRemoteJWKSet>;

  const register = async (body: Record<string, unknown>, token = admin): Promise<Registered> => {
    const r = await get().request("POST", "/0.1/oidc/clients", {
      token,
      body: { name: "rp", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true, ...body },
    });
    if (r.status !== 201) throw new Error(r.text);
    return r.json;
  };
  const configOf = (c: Registered) =>
    oidc.discovery(issuer, c.client_id, undefined, oidc.ClientSecretBasic(c.client_secret), insecure);
  const head = async (token: string, query = "") => (await get().request("HEAD", `/0.1/token/${token}${query}`)).status;
  const verify = (jwt: string, audience = CALLD) =>
    jwtVerify(jwt, jwks, { issuer: issuer.href, audience, typ: "at+jwt" });

  beforeAll(async () => {
    const t = get();
    served = serveApp(t);
    issuer = new URL(`${served.url}/0.1/oidc`);
    jwks = createRemoteJWKSet(new URL(`${issuer.href}/jwks`));
    tenant = await createTenantRow(t.app);
    const otherTenant = await createTenantRow(t.app);
    const root = (await tokenFor(t.app, { acl: ["#"] })).token;
    admin = (await tokenFor(t.app, { acl: ["auth.#", "confd.#", "calld.#"], tenantUuid: tenant })).token;
    otherAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: otherTenant })).token;
    alice = await createUserRow(t.app, { tenantUuid: tenant, username: "alice", password: "alice-secret" });
    const policy = await t.request("POST", "/0.1/policies", {
      token: root,
      tenant,
      body: { name: "alice-policy", acl: ["confd.#", "calld.calls.read", "amid.#"] },
    });
    await t.request("PUT", `/0.1/users/${alice}/policies/${policy.json.uuid}`, { token: root, tenant });
    web = await register({ name: "Web", scopes: ["openid", "profile", "offline_access"] });
    service = await register({
      name: "Daemon",
      redirect_uris: [],
      grant_types: ["client_credentials"],
      acl: ["calld.#", "confd.users.read"],
    });
    foreign = await register({ name: "Foreign", redirect_uris: [], grant_types: ["client_credentials"] }, otherAdmin);
    for (const body of [
      { identifier: CALLD, acl: ["calld.#", "confd.users.*.read"], token_format: "jwt", access_token_lifetime: 120 },
      { identifier: OPAQUE, acl: ["calld.#"], token_format: "opaque" },
    ]) {
      const r = await t.request("POST", "/0.1/oidc/resources", { token: admin, body });
      expect(r.status).toBe(201);
    }
  });
  afterAll(() => served?.stop());

  test("client credentials with resource=: an RFC 9068 JWT, verified offline with the JWKS, all claims", async () => {
    const config = await configOf(service);
    const before = Math.floor(Date.now() / 1000);
    const tokens = await oidc.clientCredentialsGrant(config, { resource: CALLD });
    expect(tokens.token_type).toBe("bearer");
    expect(tokens.expires_in).toBeLessThanOrEqual(120);
    const { payload, protectedHeader } = await verify(tokens.access_token);
    expect(protectedHeader.typ).toBe("at+jwt");
    expect(protectedHeader.kid).toBeString();
    expect(payload).toMatchObject({
      iss: issuer.href,
      aud: CALLD,
      sub: service.client_id,
      client_id: service.client_id,
      scope: "",
      tenant_uuid: tenant,
    });
    expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/);
    expect(payload.iat).toBeGreaterThanOrEqual(before);
    expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(120);
    // The entries the resource may receive that the client holds: calld.# (both), and nothing of
    // confd.users.*.read (the client's confd.users.read is not one of its strings).
    expect(payload.acl).toEqual(["calld.#"]);
    // Another audience is refused by a verifier that checks it.
    await expect(verify(tokens.access_token, "https://other.example.com")).rejects.toThrow();
    // Tessera itself checks it, against the JWT's ACL (never the client's wider one).
    expect(await head(tokens.access_token)).toBe(204);
    expect(await head(tokens.access_token, "?scope=calld.calls.read")).toBe(204);
    expect(await head(tokens.access_token, "?scope=confd.users.read")).toBe(403);
    expect(await head(tokens.access_token, `?tenant=${tenant}`)).toBe(204);
    const read = await get().request("GET", `/0.1/token/${tokens.access_token}`);
    expect(read.status).toBe(200);
    expect(read.json.data).toMatchObject({ token: tokens.access_token, acl: ["calld.#"] });
    // Introspection: active, with the JWT's audience and jti.
    const info = await oidc.tokenIntrospection(config, tokens.access_token);
    expect(info).toMatchObject({ active: true, aud: CALLD, jti: payload.jti, client_id: service.client_id });
    // Revoked (RFC 7009): HEAD answers it unknown, introspection inactive.
    await oidc.tokenRevocation(config, tokens.access_token);
    expect(await head(tokens.access_token)).toBe(404);
    expect((await oidc.tokenIntrospection(config, tokens.access_token)).active).toBe(false);
  });

  test("a forged or tampered JWT is no token", async () => {
    const config = await configOf(service);
    const { access_token } = await oidc.clientCredentialsGrant(config, { resource: CALLD });
    const [h, p, s] = access_token.split(".");
    const claims = JSON.parse(Buffer.from(p!, "base64url").toString());
    const widened = Buffer.from(JSON.stringify({ ...claims, acl: ["#"] })).toString("base64url");
    expect(await head(`${h}.${widened}.${s}`)).toBe(404);
    expect(await head(`${h}.${p}.${s!.slice(0, -4)}AAAA`)).toBe(404);
    expect(await head("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")).toBe(404);
    expect(await head(access_token)).toBe(204);
  });

  test("DELETE /0.1/token/{jwt} revokes it; so does ending the session it stands for", async () => {
    const config = await configOf(service);
    const first = await oidc.clientCredentialsGrant(config, { resource: CALLD });
    expect(await head(first.access_token)).toBe(204);
    const del = await get().request("DELETE", `/0.1/token/${first.access_token}`);
    expect(del.status).toBe(200);
    expect(await head(first.access_token)).toBe(404);
    const second = await oidc.clientCredentialsGrant(config, { resource: CALLD });
    expect(await head(second.access_token, "?scope=calld.calls.read")).toBe(204);
    const session = (await oidc.tokenIntrospection(config, second.access_token)).session_uuid as string;
    const root = (await tokenFor(get().app, { acl: ["#"] })).token;
    expect((await get().request("DELETE", `/0.1/sessions/${session}`, { token: root })).status).toBe(204);
    expect(await head(second.access_token, "?scope=calld.calls.read")).toBe(404);
    expect((await get().request("GET", `/0.1/token/${second.access_token}`)).status).toBe(404);
  });

  test("unknown resources are invalid_target (RFC 8707 §2); another tenant's resource too; the code is not spent", async () => {
    const config = await configOf(service);
    expect(await oauthError(oidc.clientCredentialsGrant(config, { resource: "https://nowhere.example.com" }))).toEqual({
      error: "invalid_target",
      status: 400,
    });
    const foreignConfig = await configOf(foreign);
    expect((await oauthError(oidc.clientCredentialsGrant(foreignConfig, { resource: CALLD }))).error).toBe(
      "invalid_target",
    );
    // Two resources at once.
    const r = await fetch(`${issuer.href}/token`, {
      method: "POST",
      body: `grant_type=client_credentials&resource=${encodeURIComponent(CALLD)}&resource=${encodeURIComponent(OPAQUE)}`,
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        Authorization: `Basic ${btoa(`${service.client_id}:${service.client_secret}`)}`,
      },
    });
    expect(r.status).toBe(400);
    expect((await r.json()).error).toBe("invalid_target");
  });

  test("an opaque resource and Tessera's own API get Tessera's usual token", async () => {
    const config = await configOf(service);
    const opaque = await oidc.clientCredentialsGrant(config, { resource: OPAQUE });
    expect(opaque.access_token).toMatch(/^[0-9a-f-]{36}$/);
    expect(await head(opaque.access_token, "?scope=calld.calls.read")).toBe(204);
    const own = await oidc.clientCredentialsGrant(config, { resource: `${served.url}/0.1` });
    expect(own.access_token).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("authorization code with resource=: a JWT for the user, the ID token's at_hash of it, userinfo accepts it, refresh gives another", async () => {
    const config = await configOf(web);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: "openid profile offline_access",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      resource: CALLD,
    });
    const back = await browserSignIn(served.url, url.toString(), "alice", "alice-secret");
    const tokens = await oidc.authorizationCodeGrant(
      config,
      back,
      { pkceCodeVerifier: verifier, expectedState: state },
      { resource: CALLD },
    );
    const { payload } = await verify(tokens.access_token);
    expect(payload).toMatchObject({ sub: alice, client_id: web.client_id, scope: "openid profile offline_access" });
    // Alice holds calld.calls.read and confd.#: the resource receives calld.calls.read and confd.users.*.read.
    expect((payload.acl as string[]).sort()).toEqual(["calld.calls.read", "confd.users.*.read"]);
    // openid-client checked the ID token; its at_hash is the JWT's (OIDC Core §3.1.3.6).
    const idHeader = decodeProtectedHeader(tokens.id_token!);
    expect(idHeader.typ).toBe("JWT");
    const { atHash } = await import("../../src/services/oidc/id-token.ts");
    expect(tokens.claims()!.at_hash).toBe(atHash(tokens.access_token));
    expect(await head(tokens.access_token, "?scope=calld.calls.read")).toBe(204);
    expect(await head(tokens.access_token, "?scope=amid.action")).toBe(403);
    const info = await oidc.fetchUserInfo(config, tokens.access_token, alice);
    expect(info.sub).toBe(alice);
    const renewed = await oidc.refreshTokenGrant(config, tokens.refresh_token!, { resource: CALLD });
    const again = await verify(renewed.access_token);
    expect(again.payload.jti).not.toBe(payload.jti);
    // Without resource, the refresh gives Tessera's usual token.
    const plain = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(plain.access_token).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("RFC 9728: Tessera's API describes itself, and a request without a valid token is told where", async () => {
    const resource = `${served.url}/0.1`;
    for (const path of [
      "/.well-known/oauth-protected-resource/0.1",
      "/.well-known/oauth-protected-resource",
      "/0.1/.well-known/oauth-protected-resource",
    ]) {
      const r = await fetch(`${served.url}${path}`);
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({
        resource,
        authorization_servers: [issuer.href],
        bearer_methods_supported: ["header"],
        resource_name: "Tessera",
        resource_documentation: `${resource}/api/docs`,
      });
    }
    // RFC 8414 §3.1's address of the provider metadata (MCP clients look there).
    const as = await fetch(`${served.url}/.well-known/oauth-authorization-server/0.1/oidc`);
    expect((await as.json()).issuer).toBe(issuer.href);
    // The metadata's resource asks for Tessera's own (opaque) token.
    const own = await oidc.clientCredentialsGrant(await configOf(service), { resource });
    expect(own.access_token).toMatch(/^[0-9a-f-]{36}$/);
    const denied = await fetch(`${served.url}/0.1/users`, { headers: { "X-Auth-Token": crypto.randomUUID() } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${served.url}/.well-known/oauth-protected-resource/0.1"`,
    );
    // Nothing of the kind on a refused login (its challenge is the password's).
    const login = await fetch(`${served.url}/0.1/token`, {
      method: "POST",
      headers: { Authorization: `Basic ${btoa("nobody:nothing")}`, "Content-Type": "application/json" },
      body: "{}",
    });
    expect(login.status).toBe(401);
    expect(login.headers.get("www-authenticate") ?? "").not.toContain("resource_metadata");
  });
});
