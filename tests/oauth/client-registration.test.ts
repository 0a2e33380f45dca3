// Dynamic Client Registration (RFC 7591) and its management (RFC 7592), driven by openid-client 6
// (its dynamicClientRegistration, then the code flow the registered client runs), and every error of
// RFC 7591 §3.2.2 / RFC 6750 §3.1 at the HTTP level; registered clients stay in their tenant.
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as oidc from "openid-client";
import { auditEntries, oidcClients } from "../../src/db/schema.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { insecure, serveApp, startAuthorization, TestBrowser, type ServedApp } from "../helpers/oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
const NATIVE = "http://127.0.0.1/callback";

describeEachDb("OIDC dynamic client registration", (get) => {
  let served: ServedApp;
  let issuer: URL;
  let tenant: string;
  let otherTenant: string;
  let admin: string;
  let otherAdmin: string;

  const initialToken = async (body: Record<string, unknown> = {}, token = admin): Promise<string> => {
    const r = await get().request("POST", "/0.1/oidc/initial-access-tokens", { token, body });
    if (r.status !== 201) throw new Error(r.text);
    return r.json.token;
  };
  /** A raw registration request, as any HTTP client sends it. */
  const register = (body: unknown, bearer?: string) =>
    fetch(`${issuer}/register`, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}) },
      body: JSON.stringify(body),
    });
  const management = (uri: string, method: string, bearer?: string, body?: unknown) =>
    fetch(uri, {
      method,
      headers: {
        ...(body ? { "Content-Type": "application/json" } : {}),
        ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });

  beforeAll(async () => {
    const t = get();
    served = serveApp(t);
    issuer = new URL(`${served.url}/0.1/oidc`);
    tenant = await createTenantRow(t.app);
    otherTenant = await createTenantRow(t.app);
    admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    otherAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: otherTenant })).token;
    await createUserRow(t.app, { tenantUuid: tenant, username: "carol", password: "carol-secret" });
  });
  afterAll(() => served?.stop());

  /** Signs carol in through the page and consents (a self-registered client is third-party). */
  const signInAndConsent = async (url: string) => {
    const browser = new TestBrowser(served.url);
    const signed = await browser.signIn(url, "carol", "carol-secret");
    expect(signed.res.status).toBe(200);
    expect(signed.html).toContain('name="decision"'); // the consent page
    const back = await browser.consent(signed.html, "allow");
    expect(back.res.status).toBe(303);
    return back.location!;
  };

  test("discovery advertises the registration endpoint", async () => {
    const meta = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(meta.registration_endpoint).toBe(`${issuer.href}/register`);
  });

  test("openid-client registers a confidential client with an initial access token, then runs the code flow (consent asked)", async () => {
    const t = get();
    const config = await oidc.dynamicClientRegistration(
      issuer,
      { redirect_uris: [REDIRECT], client_name: "Partner App", grant_types: ["authorization_code", "refresh_token"] },
      undefined,
      { initialAccessToken: await initialToken(), ...insecure },
    );
    const meta = config.clientMetadata();
    expect(meta.client_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(typeof meta.client_secret).toBe("string");
    expect(meta).toMatchObject({
      client_name: "Partner App",
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: "client_secret_basic",
      response_types: ["code"],
      client_secret_expires_at: 0,
    });
    expect(meta.registration_client_uri).toBe(`${issuer.href}/register/${meta.client_id}`);
    expect(typeof meta.registration_access_token).toBe("string");

    const flow = await startAuthorization(config, REDIRECT, { scope: "openid profile offline_access" });
    const back = await signInAndConsent(flow.url);
    const tokens = await oidc.authorizationCodeGrant(config, back, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
    });
    expect(tokens.claims()!.aud).toBe(meta.client_id);
    expect(tokens.refresh_token).toBeString();

    // In its tenant's administration: third-party, no ACL, marked as self-registered; stored hashed.
    const listed = await t.request("GET", "/0.1/oidc/clients", { token: admin });
    const client = listed.json.items.find((c: { client_id: string }) => c.client_id === meta.client_id);
    expect(client).toMatchObject({
      tenant_uuid: tenant,
      first_party: false,
      acl: [],
      self_registered: true,
      client_type: "confidential",
    });
    expect(client.registered_with).toMatch(/^[0-9a-f-]{36}$/);
    const [row] = (await t.app.db.select().from(oidcClients)).filter((r) => r.clientId === meta.client_id);
    expect(row!.registrationTokenHash).not.toBe(meta.registration_access_token);
    expect(row!.secretHash).not.toBe(meta.client_secret);
    // Another tenant's administrator does not see it.
    const other = await t.request("GET", `/0.1/oidc/clients/${meta.client_id}`, { token: otherAdmin });
    expect(other.status).toBe(404);
    // Audited (the client as actor, from its address), never with a secret.
    const trail = JSON.stringify(await t.app.db.select().from(auditEntries));
    expect(trail).toContain("oidc_client.register");
    expect(trail).not.toContain(meta.client_secret as string);
    expect(trail).not.toContain(meta.registration_access_token as string);
  });

  test("a public native client (MCP style): token_endpoint_auth_method none, loopback redirect, PKCE", async () => {
    const config = await oidc.dynamicClientRegistration(
      issuer,
      { redirect_uris: [NATIVE], token_endpoint_auth_method: "none", client_name: "Desktop agent" },
      oidc.None(),
      { initialAccessToken: await initialToken(), ...insecure },
    );
    expect(config.clientMetadata().client_secret).toBeUndefined();
    expect(config.clientMetadata().client_secret_expires_at).toBeUndefined();
    // RFC 8252 §7.3: any port on the loopback redirect.
    const flow = await startAuthorization(config, "http://127.0.0.1:49152/callback");
    const back = await signInAndConsent(flow.url);
    const tokens = await oidc.authorizationCodeGrant(config, back, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
    });
    expect(tokens.access_token).toBeString();
  });

  test("dpop_bound_access_tokens (RFC 9449 §5.2) is registered, shown, and checked as a boolean", async () => {
    const created = await register(
      { redirect_uris: [REDIRECT], dpop_bound_access_tokens: true },
      await initialToken({ max_uses: 2 }),
    );
    expect(created.status).toBe(201);
    expect(((await created.json()) as Record<string, unknown>).dpop_bound_access_tokens).toBe(true);
    const refused = await register(
      { redirect_uris: [REDIRECT], dpop_bound_access_tokens: "yes" },
      await initialToken(),
    );
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toBe("invalid_client_metadata");
  });

  test("without a usable initial access token: 401 invalid_token (RFC 6750 §3.1); open registration is off", async () => {
    const t = get();
    const body = { redirect_uris: [REDIRECT] };
    const expectRefused = async (res: Response) => {
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
      expect(((await res.json()) as { error: string }).error).toBe("invalid_token");
    };
    await expectRefused(await register(body));
    await expectRefused(await register(body, "not-a-token"));
    await expectRefused(await register(body, admin)); // a Tessera token is no initial access token
    // Single use by default: the second registration is refused.
    const once = await initialToken();
    expect((await register(body, once)).status).toBe(201);
    await expectRefused(await register(body, once));
    // max_uses: 2 → two registrations.
    const twice = await initialToken({ max_uses: 2 });
    expect((await register(body, twice)).status).toBe(201);
    expect((await register(body, twice)).status).toBe(201);
    await expectRefused(await register(body, twice));
    // Revoked.
    const r = await t.request("POST", "/0.1/oidc/initial-access-tokens", { token: admin, body: {} });
    await t.request("DELETE", `/0.1/oidc/initial-access-tokens/${r.json.uuid}`, { token: admin });
    await expectRefused(await register(body, r.json.token));
    // Expired.
    const { oidcInitialAccessTokens } = await import("../../src/db/schema.ts");
    const late = await t.request("POST", "/0.1/oidc/initial-access-tokens", { token: admin, body: {} });
    const { eq } = await import("drizzle-orm");
    await t.app.db
      .update(oidcInitialAccessTokens)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(oidcInitialAccessTokens.uuid, late.json.uuid));
    await expectRefused(await register(body, late.json.token));
  });

  test("metadata errors (RFC 7591 §3.2.2): invalid_redirect_uri / invalid_client_metadata, and the use is not spent", async () => {
    const t = get();
    const token = await initialToken({ grant_types: ["authorization_code"] });
    const cases: [unknown, string, string][] = [
      [{ redirect_uris: ["https://rp.example.com/cb#frag"] }, "invalid_redirect_uri", "fragment"],
      [{ redirect_uris: ["http://rp.example.com/cb"] }, "invalid_redirect_uri", "127.0.0.1"],
      [{ redirect_uris: ["https://*.example.com/cb"] }, "invalid_redirect_uri", "wildcard"],
      [{ redirect_uris: ["javascript:alert(1)"] }, "invalid_redirect_uri", "scheme"],
      [{ redirect_uris: "https://rp.example.com/cb" }, "invalid_client_metadata", "redirect_uris"],
      [{}, "invalid_redirect_uri", "redirect URI"],
      [{ redirect_uris: [REDIRECT], first_party: true }, "invalid_client_metadata", "first_party"],
      [{ redirect_uris: [REDIRECT], acl: ["auth.#"] }, "invalid_client_metadata", "acl"],
      [{ redirect_uris: [REDIRECT], allow_insecure_redirects: true }, "invalid_client_metadata", "allow_insecure"],
      [
        { redirect_uris: [REDIRECT], grant_types: ["authorization_code", "refresh_token"] },
        "invalid_client_metadata",
        "refresh_token",
      ],
      [{ redirect_uris: [REDIRECT], grant_types: ["client_credentials"] }, "invalid_client_metadata", "client_cred"],
      [{ redirect_uris: [REDIRECT], grant_types: ["implicit"] }, "invalid_client_metadata", "implicit"],
      [{ redirect_uris: [REDIRECT], response_types: ["token"] }, "invalid_client_metadata", "code"],
      [
        { redirect_uris: [REDIRECT], token_endpoint_auth_method: "private_key_jwt" },
        "invalid_client_metadata",
        "one of",
      ],
      [{ redirect_uris: [REDIRECT], id_token_signed_response_alg: "none" }, "invalid_client_metadata", "ES256"],
      [{ redirect_uris: [REDIRECT], scope: "openid bad\u0001" }, "invalid_client_metadata", "scope"],
      [{ redirect_uris: [REDIRECT], client_name: "" }, "invalid_client_metadata", "client_name"],
      [{ redirect_uris: [REDIRECT], logo_uri: "javascript:x" }, "invalid_client_metadata", "logo_uri"],
      [
        { redirect_uris: [REDIRECT], jwks: { keys: [{ kty: "oct", k: "c2VjcmV0" }] } },
        "invalid_client_metadata",
        "jwks",
      ],
      [
        { redirect_uris: [REDIRECT], jwks: { keys: [{ kty: "EC", crv: "P-256", x: "a", y: "b", d: "c" }] } },
        "invalid_client_metadata",
        "public keys only",
      ],
      [
        { redirect_uris: [REDIRECT], jwks: { keys: [{ kty: "EC" }] }, jwks_uri: "https://rp.example.com/jwks" },
        "invalid_client_metadata",
        "jwks_uri",
      ],
      [{ redirect_uris: [REDIRECT], jwks_uri: "https://169.254.169.254/latest" }, "invalid_client_metadata", "private"],
      [["not", "an", "object"], "invalid_client_metadata", "object"],
    ];
    for (const [body, error, words] of cases) {
      const res = await register(body, token);
      const answer = (await res.json()) as { error: string; error_description: string };
      expect({ body, status: res.status, error: answer.error }).toEqual({ body, status: 400, error });
      expect(answer.error_description.toLowerCase()).toContain(words.toLowerCase());
    }
    // Nothing was registered, and the token's one use is still there.
    const listed = await t.request("GET", "/0.1/oidc/clients", { token: admin });
    const before = listed.json.total;
    expect((await register({ redirect_uris: [REDIRECT] }, token)).status).toBe(201);
    expect((await t.request("GET", "/0.1/oidc/clients", { token: admin })).json.total).toBe(before + 1);
  });

  test("the token decides the tenant: a client registered with another tenant's token lives there only", async () => {
    const t = get();
    const res = await register({ redirect_uris: [REDIRECT] }, await initialToken({}, otherAdmin));
    const { client_id } = (await res.json()) as { client_id: string };
    expect((await t.request("GET", `/0.1/oidc/clients/${client_id}`, { token: otherAdmin })).json.tenant_uuid).toBe(
      otherTenant,
    );
    expect((await t.request("GET", `/0.1/oidc/clients/${client_id}`, { token: admin })).status).toBe(404);
    // carol (of the first tenant) cannot sign in to it: the client's tenant decides who may.
    const config = await oidc.discovery(issuer, client_id, undefined, oidc.None(), insecure);
    const flow = await startAuthorization(config, REDIRECT);
    const browser = new TestBrowser(served.url);
    const signed = await browser.signIn(flow.url, "carol", "carol-secret");
    expect(signed.res.status).toBe(401);
  });

  test("RFC 7592: read, replace and delete with the registration access token; nothing without it", async () => {
    const t = get();
    const res = await register(
      { redirect_uris: [REDIRECT], client_name: "Managed", contacts: ["ops@rp.example.com"] },
      await initialToken(),
    );
    expect(res.status).toBe(201);
    const reg = (await res.json()) as Record<string, string>;
    const uri = reg.registration_client_uri!;
    const rat = reg.registration_access_token!;

    const read = await management(uri, "GET", rat);
    expect(read.status).toBe(200);
    expect(read.headers.get("cache-control")).toBe("no-store");
    const current = (await read.json()) as Record<string, unknown>;
    expect(current).toMatchObject({
      client_id: reg.client_id,
      client_name: "Managed",
      contacts: ["ops@rp.example.com"],
    });
    expect(current.client_secret).toBeUndefined();
    expect(current.registration_access_token).toBeUndefined();

    for (const bearer of [undefined, "wrong", admin, reg.client_secret]) {
      const refused = await management(uri, "GET", bearer);
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { error: string }).error).toBe("invalid_token");
    }
    // Another client's registration access token does not open this one.
    const other = (await (await register({ redirect_uris: [REDIRECT] }, await initialToken())).json()) as Record<
      string,
      string
    >;
    expect((await management(uri, "GET", other.registration_access_token)).status).toBe(401);
    expect((await management(`${issuer}/register/not-a-uuid`, "GET", rat)).status).toBe(401);

    // Replace: client_id required and this one; the type cannot change; a new redirect URI is checked.
    const replace = { client_id: reg.client_id, redirect_uris: ["https://rp.example.com/new"], client_name: "Renamed" };
    const noId = await management(uri, "PUT", rat, { redirect_uris: [REDIRECT] });
    expect(noId.status).toBe(400);
    expect(((await noId.json()) as { error: string }).error).toBe("invalid_request");
    const toPublic = await management(uri, "PUT", rat, { ...replace, token_endpoint_auth_method: "none" });
    expect(((await toPublic.json()) as { error: string }).error).toBe("invalid_client_metadata");
    const badUri = await management(uri, "PUT", rat, { ...replace, redirect_uris: ["http://evil.example/cb"] });
    expect(((await badUri.json()) as { error: string }).error).toBe("invalid_redirect_uri");
    const wrongSecret = await management(uri, "PUT", rat, { ...replace, client_secret: "guess" });
    expect(wrongSecret.status).toBe(400);
    const firstParty = await management(uri, "PUT", rat, { ...replace, first_party: true });
    expect(((await firstParty.json()) as { error: string }).error).toBe("invalid_client_metadata");
    const updated = await management(uri, "PUT", rat, { ...replace, client_secret: reg.client_secret });
    expect(updated.status).toBe(200);
    expect(await updated.json()).toMatchObject({
      client_name: "Renamed",
      redirect_uris: ["https://rp.example.com/new"],
    });
    const adminView = await t.request("GET", `/0.1/oidc/clients/${reg.client_id}`, { token: admin });
    expect(adminView.json).toMatchObject({
      name: "Renamed",
      redirect_uris: ["https://rp.example.com/new"],
      first_party: false,
    });

    // Delete: 204, then the token opens nothing and the client is gone from the administration.
    expect((await management(uri, "DELETE", "wrong")).status).toBe(401);
    expect((await management(uri, "DELETE", rat)).status).toBe(204);
    expect((await management(uri, "GET", rat)).status).toBe(401);
    expect((await t.request("GET", `/0.1/oidc/clients/${reg.client_id}`, { token: admin })).status).toBe(404);
    const trail = JSON.stringify(await t.app.db.select().from(auditEntries));
    expect(trail).toContain("oidc_client.register_update");
    expect(trail).toContain("oidc_client.register_delete");
    expect(trail).not.toContain(rat);
  });

  test("an administrator-created client has no registration access token: RFC 7592 refuses it", async () => {
    const t: TestApp = get();
    const created = await t.request("POST", "/0.1/oidc/clients", {
      token: admin,
      body: { name: "admin-made", client_type: "confidential", redirect_uris: [REDIRECT] },
    });
    const res = await management(`${issuer}/register/${created.json.client_id}`, "GET", created.json.client_secret);
    expect(res.status).toBe(401);
    expect(created.json.self_registered).toBe(false);
  });

  test("logout URIs register as an administrator's would: checked by the outbound guard, answered back", async () => {
    // The test app leaves outbound_http at its defaults: private addresses and plain http refused.
    const refused = await register(
      { redirect_uris: [REDIRECT], backchannel_logout_uri: "https://127.0.0.1/logout" },
      await initialToken(),
    );
    expect(refused.status).toBe(400);
    const body = (await refused.json()) as { error: string; error_description: string };
    expect(body.error).toBe("invalid_client_metadata");
    expect(body.error_description).toContain("backchannel_logout_uri");
    const fragment = await register(
      { redirect_uris: [REDIRECT], frontchannel_logout_uri: "https://rp.example.com/fc#x" },
      await initialToken(),
    );
    expect(fragment.status).toBe(400);
    const ok = await register(
      {
        redirect_uris: [REDIRECT],
        backchannel_logout_uri: "https://rp.example.com/bc",
        backchannel_logout_session_required: true,
        frontchannel_logout_uri: "https://rp.example.com/fc",
      },
      await initialToken(),
    );
    expect(ok.status).toBe(201);
    const registered = (await ok.json()) as Record<string, unknown>;
    expect(registered.backchannel_logout_uri).toBe("https://rp.example.com/bc");
    expect(registered.backchannel_logout_session_required).toBe(true);
    expect(registered.frontchannel_logout_uri).toBe("https://rp.example.com/fc");
    // RFC 7592 §2.2: a replacement without them removes them.
    const replaced = await management(
      registered.registration_client_uri as string,
      "PUT",
      registered.registration_access_token as string,
      { client_id: registered.client_id, client_secret: registered.client_secret, redirect_uris: [REDIRECT] },
    );
    expect(replaced.status).toBe(200);
    expect(((await replaced.json()) as Record<string, unknown>).backchannel_logout_uri).toBeUndefined();
  });
});
