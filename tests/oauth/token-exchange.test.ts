// RFC 8693 token exchange, driven by openid-client's genericGrantRequest against the app served
// over real HTTP: narrowing only (the grant rule refuses any broadening), tenant isolation of the
// subject and actor tokens, delegation (`act`, RFC 8693 §4.1) into an RFC 9068 JWT verified with
// jose against the JWKS, impersonation by an administrator holding the dedicated ACL (audited with
// both identities), and the error codes of §2.2.2.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createRemoteJWKSet, jwtVerify } from "jose";
import * as oidc from "openid-client";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";

const EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS = "urn:ietf:params:oauth:token-type:access_token";
const USER_UUID = "urn:tessera:params:oauth:token-type:user_uuid";
const CALLD = "https://calld.example.com";
const insecure = { execute: [oidc.allowInsecureRequests] };

interface Registered {
  client_id: string;
  client_secret: string;
}

async function refusal(p: Promise<unknown>): Promise<{ error?: string; status?: number }> {
  try {
    await p;
  } catch (e) {
    const err = e as { error?: string; status?: number; cause?: { error?: string } };
    return { error: err.error ?? err.cause?.error, status: err.status };
  }
  throw new Error("expected a refusal");
}

describeEachDb("RFC 8693 token exchange", (get) => {
  let served: ServedApp;
  let issuer: URL;
  let tenant: string;
  let root: string;
  let alice: string;
  let aliceToken: string;
  let bobToken: string;
  let exchanger: Registered;
  let foreignExchanger: Registered;
  let plain: Registered;
  let config: oidc.Configuration;

  const register = async (body: Record<string, unknown>, token: string): Promise<Registered> => {
    const r = await get().request("POST", "/0.1/oidc/clients", {
      token,
      body: { name: "rp", client_type: "confidential", redirect_uris: [], first_party: true, ...body },
    });
    if (r.status !== 201) throw new Error(r.text);
    return r.json;
  };
  const configOf = (c: Registered) =>
    oidc.discovery(issuer, c.client_id, undefined, oidc.ClientSecretBasic(c.client_secret), insecure);
  const exchange = (params: Record<string, string>, cfg = config) =>
    oidc.genericGrantRequest(cfg, EXCHANGE, { subject_token_type: ACCESS, ...params });
  const head = async (token: string, scope?: string) =>
    (await get().request("HEAD", `/0.1/token/${token}${scope ? `?scope=${scope}` : ""}`)).status;
  const login = async (username: string, password: string) => {
    const r = await get().request("POST", "/0.1/token", {
      body: { expiration: 600 },
      headers: { Authorization: `Basic ${btoa(`${username}:${password}`)}` },
    });
    if (r.status !== 200) throw new Error(r.text);
    return r.json.data.token as string;
  };

  beforeAll(async () => {
    const t = get();
    served = serveApp(t);
    issuer = new URL(`${served.url}/0.1/oidc`);
    tenant = await createTenantRow(t.app);
    const otherTenant = await createTenantRow(t.app);
    root = (await tokenFor(t.app, { acl: ["#"] })).token;
    const admin = (await tokenFor(t.app, { acl: ["auth.#", "confd.#", "calld.#"], tenantUuid: tenant })).token;
    const otherAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: otherTenant })).token;
    alice = await createUserRow(t.app, { tenantUuid: tenant, username: "alice", password: "alice-secret" });
    await createUserRow(t.app, { tenantUuid: otherTenant, username: "bob", password: "bob-secret" });
    const policy = await t.request("POST", "/0.1/policies", {
      token: root,
      tenant,
      body: { name: "alice-policy", acl: ["confd.#", "calld.calls.read", "!confd.admin.#"] },
    });
    await t.request("PUT", `/0.1/users/${alice}/policies/${policy.json.uuid}`, { token: root, tenant });
    aliceToken = await login("alice", "alice-secret");
    bobToken = await login("bob", "bob-secret");
    const scopes = ["acl:confd.#", "acl:calld.#", "acl:#", "acl:amid.#"];
    exchanger = await register({ name: "Gateway", grant_types: [EXCHANGE], scopes }, admin);
    foreignExchanger = await register({ name: "Foreign", grant_types: [EXCHANGE], scopes }, otherAdmin);
    plain = await register({ name: "Plain", grant_types: ["client_credentials"] }, admin);
    const r = await t.request("POST", "/0.1/oidc/resources", {
      token: admin,
      body: { identifier: CALLD, acl: ["calld.#", "confd.#"], token_format: "jwt" },
    });
    expect(r.status).toBe(201);
    config = await configOf(exchanger);
  });
  afterAll(() => served?.stop());

  test("discovery announces the grant; a public client cannot register it", async () => {
    const doc = await (await fetch(`${issuer.href}/.well-known/openid-configuration`)).json();
    expect(doc.grant_types_supported).toContain(EXCHANGE);
    const pub = await get().request("POST", "/0.1/oidc/clients", {
      token: root,
      body: { name: "p", client_type: "public", redirect_uris: [], grant_types: [EXCHANGE] },
    });
    expect(pub.status).toBe(400);
    expect(pub.json.details.grant_types.constraint_id).toBe("confidential_only");
  });

  test("a narrower token for the same user: ACL narrowed by ACL scopes, issued_token_type, introspected", async () => {
    const tokens = await exchange({ subject_token: aliceToken, scope: "acl:confd.users.#" });
    expect(tokens.issued_token_type).toBe(ACCESS);
    expect(tokens.token_type).toBe("bearer");
    expect(tokens.scope).toBe("acl:confd.users.#");
    expect(await head(tokens.access_token, "confd.users.read")).toBe(204);
    expect(await head(tokens.access_token, "calld.calls.read")).toBe(403);
    expect(await head(aliceToken, "calld.calls.read")).toBe(204);
    const info = await oidc.tokenIntrospection(config, tokens.access_token);
    expect(info).toMatchObject({ active: true, sub: alice, client_id: exchanger.client_id });
    expect(info.act).toBeUndefined();
    // Without scope: the subject's whole ACL, never more.
    const whole = await exchange({ subject_token: aliceToken });
    expect(await head(whole.access_token, "calld.calls.read")).toBe(204);
    expect(await head(whole.access_token, "confd.admin.users.read")).toBe(403);
    expect(await head(whole.access_token, "amid.action")).toBe(403);
  });

  test("broadening is refused (invalid_scope), never silently narrowed", async () => {
    expect(await refusal(exchange({ subject_token: aliceToken, scope: "acl:#" }))).toMatchObject({
      error: "invalid_scope",
    });
    expect((await refusal(exchange({ subject_token: aliceToken, scope: "acl:amid.#" }))).error).toBe("invalid_scope");
    // A deny entry of the subject overlaps: refused too.
    expect((await refusal(exchange({ subject_token: aliceToken, scope: "acl:confd.#" }))).error).toBe("invalid_scope");
    // A narrower exchanged token cannot be exchanged back to a wider one.
    const narrow = await exchange({ subject_token: aliceToken, scope: "acl:confd.users.#" });
    expect((await refusal(exchange({ subject_token: narrow.access_token, scope: "acl:calld.#" }))).error).toBe(
      "invalid_scope",
    );
  });

  test("RFC 8693 §2.2.2 errors: invalid or foreign subject tokens, unsupported types, clients not allowed", async () => {
    expect(await refusal(exchange({ subject_token: crypto.randomUUID() }))).toMatchObject({
      error: "invalid_request",
      status: 400,
    });
    // A token of another tenant: the same answer as an unknown one.
    expect((await refusal(exchange({ subject_token: bobToken }))).error).toBe("invalid_request");
    // The other tenant's client cannot exchange this tenant's tokens either.
    expect((await refusal(exchange({ subject_token: aliceToken }, await configOf(foreignExchanger)))).error).toBe(
      "invalid_request",
    );
    expect(
      (
        await refusal(
          exchange({ subject_token: aliceToken, subject_token_type: "urn:ietf:params:oauth:token-type:saml2" }),
        )
      ).error,
    ).toBe("invalid_request");
    expect(
      (
        await refusal(
          exchange({ subject_token: aliceToken, requested_token_type: "urn:ietf:params:oauth:token-type:id_token" }),
        )
      ).error,
    ).toBe("invalid_request");
    expect((await refusal(exchange({ subject_token: aliceToken }, await configOf(plain)))).error).toBe(
      "unauthorized_client",
    );
    expect(
      (await refusal(exchange({ subject_token: aliceToken, resource: "https://nowhere.example.com" }))).error,
    ).toBe("invalid_target");
  });

  test("delegation: actor_token gives an act claim, in a JWT for a resource (audience) verified offline", async () => {
    const t = get();
    const service = await tokenFor(t.app, { acl: ["calld.#"], tenantUuid: tenant });
    const tokens = await exchange({
      subject_token: aliceToken,
      actor_token: service.token,
      actor_token_type: ACCESS,
      audience: CALLD,
      scope: "acl:calld.calls.read",
    });
    const jwks = createRemoteJWKSet(new URL(`${issuer.href}/jwks`));
    const { payload } = await jwtVerify(tokens.access_token, jwks, {
      issuer: issuer.href,
      audience: CALLD,
      typ: "at+jwt",
    });
    expect(payload).toMatchObject({ sub: alice, client_id: exchanger.client_id, act: { sub: service.userUuid } });
    expect(payload.acl).toEqual(["calld.calls.read", "!confd.admin.#"]);
    expect(await head(tokens.access_token, "calld.calls.read")).toBe(204);
    // A second hop keeps the chain (RFC 8693 §4.1: the outermost act is the current actor).
    const again = await exchange({
      subject_token: aliceToken,
      actor_token: tokens.access_token,
      actor_token_type: ACCESS,
    });
    const info = await oidc.tokenIntrospection(config, again.access_token);
    expect(info.act).toEqual({ sub: alice, act: { sub: service.userUuid } });
    // A foreign actor: refused.
    expect(
      (await refusal(exchange({ subject_token: aliceToken, actor_token: bobToken, actor_token_type: ACCESS }))).error,
    ).toBe("invalid_request");
  });

  test("impersonation: an administrator holding auth.users.{uuid}.impersonate over its subtree, audited with both identities", async () => {
    const t = get();
    const helpdesk = await tokenFor(t.app, { acl: [`auth.users.${alice}.impersonate`], tenantUuid: tenant });
    const tokens = await exchange({
      subject_token: alice,
      subject_token_type: USER_UUID,
      actor_token: helpdesk.token,
      actor_token_type: ACCESS,
      scope: "acl:confd.users.#",
    });
    expect(await head(tokens.access_token, "confd.users.read")).toBe(204);
    expect(await head(tokens.access_token, "calld.calls.read")).toBe(403);
    const read = await t.request("GET", `/0.1/token/${tokens.access_token}`);
    expect(read.json.data.metadata.uuid).toBe(alice);
    const info = await oidc.tokenIntrospection(config, tokens.access_token);
    expect(info).toMatchObject({ active: true, sub: alice, act: { sub: helpdesk.userUuid } });
    const audit = await t.request(
      "GET",
      `/0.1/audit?action=token.exchange&target_uuid=${alice}&recurse=true&limit=50`,
      {
        token: root,
      },
    );
    expect(audit.status).toBe(200);
    const entry = audit.json.items.find((e: { changes: Array<{ field: string; new: unknown }> }) =>
      e.changes.some((c) => c.field === "impersonation"),
    );
    const change = (f: string) => entry.changes.find((c: { field: string }) => c.field === f)?.new;
    expect(change("subject")).toBe(alice);
    expect(change("actor")).toBe(helpdesk.userUuid);
    expect(change("client_id")).toBe(exchanger.client_id);
    // Without the dedicated ACL, or over a user outside its subtree: refused alike.
    const other = await tokenFor(t.app, { acl: ["auth.users.#.read"], tenantUuid: tenant });
    const bad = { subject_token: alice, subject_token_type: USER_UUID, actor_token_type: ACCESS };
    expect((await refusal(exchange({ ...bad, actor_token: other.token }))).error).toBe("invalid_request");
    const elsewhere = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: await createTenantRow(t.app) });
    expect((await refusal(exchange({ ...bad, actor_token: elsewhere.token }))).error).toBe("invalid_request");
    expect((await refusal(exchange({ subject_token: alice, subject_token_type: USER_UUID }))).error).toBe(
      "invalid_request",
    );
  });
});
