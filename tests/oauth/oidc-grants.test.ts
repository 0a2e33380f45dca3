// The token endpoint's other grants, driven end to end by panva's openid-client against the app
// served over real HTTP: refresh tokens (OIDC Core §11, RFC 6749 §6; rotation and reuse detection
// for public clients), client credentials (RFC 6749 §4.4) with the client's ACL under the grant
// rule, the device authorization grant (RFC 8628) through its verification page, ACL scopes, and
// introspection / revocation of refresh tokens (RFC 7662, RFC 7009) — with a negative test for
// every refusal, tenant isolation, and what discovery announces.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import * as oidc from "openid-client";
import { oidcDeviceCodes, refreshTokens, users } from "../../src/db/schema.ts";
import { boundStatements, MAX_SETS } from "../../src/db/bound-inserts.ts";
import { verifyAudit } from "../../src/services/audit/chain.ts";
import { listRecordedEvents } from "../../src/services/events.ts";
import { narrowAcl } from "../../src/services/oidc/acl-scope.ts";
import { findClient } from "../../src/services/oidc/clients.ts";
import { clientCredentialsToken } from "../../src/services/oidc/grants/client-credentials.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { answerDevicePage, browserSignIn, openLoginPage, serveApp, type ServedApp } from "../helpers/oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
const APP_REDIRECT = "com.example.phone:/cb";
const DEVICE = "urn:ietf:params:oauth:grant-type:device_code";
const insecure = { execute: [oidc.allowInsecureRequests] };
const ACL_SCOPES = ["acl:confd.users.me.read", "acl:calld.#", "acl:confd.admin.#"];

interface Registered {
  client_id: string;
  client_secret?: string;
}

/** The OAuth error of a refused openid-client call (ResponseBodyError), or the message. */
async function oauthError(p: Promise<unknown>): Promise<{ error?: string; status?: number; message: string }> {
  try {
    await p;
  } catch (e) {
    const err = e as { error?: string; status?: number; message: string; cause?: { error?: string } };
    return { error: err.error ?? err.cause?.error, status: err.status, message: err.message };
  }
  throw new Error("expected a refusal");
}

describeEachDb(
  "OpenID Connect grants",
  (get) => {
    let served: ServedApp;
    let issuer: URL;
    let tenant: string;
    let otherTenant: string;
    let admin: string;
    let otherAdmin: string;
    let root: string;
    let alice: string;
    let web: Registered;
    let phone: Registered;
    let service: Registered;
    let tv: Registered;
    let foreignTv: Registered;
    let codeOnly: Registered;

    const register = async (body: Record<string, unknown>, token = admin): Promise<Registered> => {
      const r = await get().request("POST", "/0.1/oidc/clients", {
        token,
        // First-party: the consent screen (oidc-sso.test.ts) is not what these tests are about.
        body: { name: "rp", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true, ...body },
      });
      if (r.status !== 201) throw new Error(r.text);
      return r.json;
    };
    const configOf = (c: Registered) =>
      oidc.discovery(
        issuer,
        c.client_id,
        undefined,
        c.client_secret ? oidc.ClientSecretBasic(c.client_secret) : oidc.None(),
        insecure,
      );
    const head = async (token: string, scope?: string) =>
      (await get().request("HEAD", `/0.1/token/${token}${scope ? `?scope=${encodeURIComponent(scope)}` : ""}`)).status;
    /** Raw token endpoint call (for answers openid-client would not show as such). */
    const tokenEndpoint = (form: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(`${issuer.href}/token`, {
        method: "POST",
        body: new URLSearchParams(form),
        headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
      });

    beforeAll(async () => {
      const t = get();
      served = serveApp(t);
      issuer = new URL(`${served.url}/0.1/oidc`);
      tenant = await createTenantRow(t.app);
      otherTenant = await createTenantRow(t.app);
      root = (await tokenFor(t.app, { acl: ["#"] })).token;
      admin = (await tokenFor(t.app, { acl: ["auth.#", "confd.#", "calld.#"], tenantUuid: tenant })).token;
      otherAdmin = (await tokenFor(t.app, { acl: ["auth.#", "confd.#", "calld.#"], tenantUuid: otherTenant })).token;
      alice = await createUserRow(t.app, { tenantUuid: tenant, username: "alice", password: "alice-secret" });
      await createUserRow(t.app, { tenantUuid: otherTenant, username: "bob", password: "bob-secret" });
      // Alice's ACL: a policy of her tenant.
      const policy = await t.request("POST", "/0.1/policies", {
        token: root,
        tenant,
        body: { name: "alice-policy", acl: ["confd.#", "calld.calls.read", "!confd.admin.#"] },
      });
      expect(policy.status).toBe(200);
      expect(
        (await t.request("PUT", `/0.1/users/${alice}/policies/${policy.json.uuid}`, { token: root, tenant })).status,
      ).toBe(204);
      const scopes = ["openid", "profile", "email", "offline_access", ...ACL_SCOPES];
      web = await register({ name: "Web", scopes });
      phone = await register({
        name: "Phone",
        client_type: "public",
        redirect_uris: [APP_REDIRECT],
        grant_types: ["authorization_code", "refresh_token", DEVICE],
        scopes,
      });
      service = await register({
        name: "Billing daemon",
        redirect_uris: [],
        grant_types: ["client_credentials"],
        acl: ["confd.users.read", "calld.#"],
        scopes: ["acl:calld.#"],
      });
      tv = await register({
        name: "Living-room TV",
        redirect_uris: [],
        grant_types: [DEVICE, "refresh_token"],
        scopes,
      });
      foreignTv = await register(
        { name: "Foreign TV", redirect_uris: [], grant_types: [DEVICE, "refresh_token"] },
        otherAdmin,
      );
      codeOnly = await register({ name: "No refresh", grant_types: ["authorization_code"] });
    });
    afterAll(() => served?.stop());

    async function codeFlow(client: Registered, scope: string, redirect = REDIRECT) {
      const config = await configOf(client);
      const verifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirect,
        scope,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        state,
      });
      const back = await browserSignIn(served.url, url.toString(), "alice", "alice-secret");
      const tokens = await oidc.authorizationCodeGrant(config, back, {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
      return { config, tokens, back, verifier };
    }

    test("discovery announces every grant the token endpoint serves, and only those; implicit and password are refused", async () => {
      const doc = await (await fetch(`${issuer.href}/.well-known/openid-configuration`)).json();
      expect(doc.grant_types_supported).toEqual([
        "authorization_code",
        "refresh_token",
        "client_credentials",
        DEVICE,
        "urn:ietf:params:oauth:grant-type:token-exchange",
      ]);
      expect(doc.device_authorization_endpoint).toBe(`${issuer.href}/device_authorization`);
      expect(doc.scopes_supported).toContain("offline_access");
      const auth = { client_id: web.client_id, client_secret: web.client_secret! };
      // Every announced grant reaches its handler (an error about its own parameters, never unsupported_grant_type).
      for (const grant of doc.grant_types_supported as string[]) {
        const r = await tokenEndpoint({ ...auth, grant_type: grant });
        expect([grant, (await r.json()).error]).not.toEqual([grant, "unsupported_grant_type"]);
      }
      for (const grant of ["password", "implicit", "urn:ietf:params:oauth:grant-type:jwt-bearer", ""]) {
        const r = await tokenEndpoint({ ...auth, grant_type: grant, username: "alice", password: "alice-secret" });
        expect(r.status).toBe(400);
        expect((await r.json()).error).toBe("unsupported_grant_type");
      }
      // A grant the client was not registered for.
      const r = await tokenEndpoint({ ...auth, grant_type: "client_credentials" });
      expect((await r.json()).error).toBe("unauthorized_client");
    });

    test("refresh (confidential client): offline_access gives a refresh token, listed and revocable as a Tessera refresh token", async () => {
      const t = get();
      const { config, tokens } = await codeFlow(web, "openid profile offline_access");
      expect(tokens.refresh_token).toBeString();
      const first = tokens.claims()!;
      const renewed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
      expect(renewed.access_token).not.toBe(tokens.access_token);
      // A confidential client's refresh token is not rotated.
      expect(renewed.refresh_token).toBe(tokens.refresh_token);
      // OIDC Core §12.2: same sub and aud, the original auth_time, a new iat.
      expect(renewed.claims()).toMatchObject({ sub: alice, aud: web.client_id, auth_time: first.auth_time });
      expect(await head(renewed.access_token)).toBe(204);
      // A new session of Alice's, with her ACL.
      expect(await head(renewed.access_token, "confd.users.read")).toBe(204);
      // The family is Tessera's refresh token of (alice, client): listed by the existing route…
      const listed = await t.request("GET", `/0.1/users/${alice}/tokens`, { token: root });
      expect(listed.json.items.map((i: { client_id: string }) => i.client_id)).toContain(web.client_id);
      // …and deleting it there ends the grant: no more refreshing. (As for every refresh token
      // deleted by that route, the sessions already issued stay valid until they expire.)
      const del = await t.request("DELETE", `/0.1/users/${alice}/tokens/${web.client_id}`, { token: root });
      expect(del.status).toBe(204);
      expect((await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token!))).error).toBe("invalid_grant");
    });

    test("no refresh token without offline_access, nor for a client not allowed the refresh grant", async () => {
      const without = await codeFlow(web, "openid");
      expect(without.tokens.refresh_token).toBeUndefined();
      const notAllowed = await codeFlow(codeOnly, "openid offline_access");
      expect(notAllowed.tokens.refresh_token).toBeUndefined();
    });

    test("refresh (public client): rotated; a rotated token presented again revokes the whole family and its sessions", async () => {
      const t = get();
      const { config, tokens } = await codeFlow(phone, "openid offline_access", APP_REDIRECT);
      const r1 = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
      expect(r1.refresh_token).toBeString();
      expect(r1.refresh_token).not.toBe(tokens.refresh_token);
      const r2 = await oidc.refreshTokenGrant(config, r1.refresh_token!);
      expect(await head(r2.access_token)).toBe(204);
      // The first refresh token again (an attacker's copy, or a replay): refused, and everything goes.
      expect((await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token!))).error).toBe("invalid_grant");
      for (const access of [tokens.access_token, r1.access_token, r2.access_token])
        expect(await head(access)).toBe(404);
      expect((await oauthError(oidc.refreshTokenGrant(config, r2.refresh_token!))).error).toBe("invalid_grant");
      const family = await t.app.db.select().from(refreshTokens).where(eq(refreshTokens.clientId, phone.client_id));
      expect(family).toEqual([]);
    });

    test("refresh refusals: another client's refresh token, a wrong secret, a wider scope, garbage", async () => {
      const { config, tokens } = await codeFlow(web, "openid offline_access");
      const phoneConfig = await configOf(phone);
      expect((await oauthError(oidc.refreshTokenGrant(phoneConfig, tokens.refresh_token!))).error).toBe(
        "invalid_grant",
      );
      // A confidential client must authenticate: a wrong secret is 401 invalid_client with WWW-Authenticate.
      const wrong = await tokenEndpoint(
        { grant_type: "refresh_token", refresh_token: tokens.refresh_token! },
        { Authorization: `Basic ${btoa(`${web.client_id}:not-the-secret`)}` },
      );
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get("www-authenticate")).toMatch(/^Basic /);
      expect((await wrong.json()).error).toBe("invalid_client");
      const noSecret = await tokenEndpoint({
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token!,
        client_id: web.client_id,
      });
      expect(noSecret.status).toBe(401);
      expect(
        (await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token!, { scope: "openid profile" }))).error,
      ).toBe("invalid_scope");
      expect((await oauthError(oidc.refreshTokenGrant(config, "x".repeat(43)))).error).toBe("invalid_grant");
      // The refused attempts spent nothing: the refresh token still works.
      expect((await oidc.refreshTokenGrant(config, tokens.refresh_token!)).access_token).toBeString();
    });

    test("refresh for a user disabled since (directly in the database, no revocation ran): invalid_grant, no token", async () => {
      const t = get();
      const carol = await createUserRow(t.app, { tenantUuid: tenant, username: "carol", password: "carol-secret" });
      const config = await configOf(web);
      const verifier = oidc.randomPKCECodeVerifier();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT,
        scope: "openid offline_access",
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
      });
      const back = await browserSignIn(served.url, url.toString(), "carol", "carol-secret");
      const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier });
      await t.app.db.update(users).set({ enabled: false }).where(eq(users.uuid, carol));
      expect((await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token!))).error).toBe("invalid_grant");
      await t.app.db.update(users).set({ enabled: true }).where(eq(users.uuid, carol));
      expect((await oidc.refreshTokenGrant(config, tokens.refresh_token!)).access_token).toBeString();
    });

    test("ACL scopes narrow the token to the intersection with the user's ACL, on the code and the refresh alike", async () => {
      const { config, tokens } = await codeFlow(web, "openid offline_access acl:confd.users.me.read acl:calld.#");
      expect(await head(tokens.access_token, "confd.users.me.read")).toBe(204);
      expect(await head(tokens.access_token, `confd.users.${alice}.read`)).toBe(204); // `me` is the user
      expect(await head(tokens.access_token, "confd.users.read")).toBe(403); // Alice has it, not asked
      expect(await head(tokens.access_token, "calld.calls.read")).toBe(204); // asked calld.#, Alice has this part
      expect(await head(tokens.access_token, "calld.calls.delete")).toBe(403); // asked, Alice has not
      const renewed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
      expect(await head(renewed.access_token, "calld.calls.read")).toBe(204);
      expect(await head(renewed.access_token, "confd.users.read")).toBe(403);
      // A narrower refresh: only the confd part.
      const narrower = await oidc.refreshTokenGrant(config, tokens.refresh_token!, {
        scope: "openid acl:confd.users.me.read",
      });
      expect(await head(narrower.access_token, "calld.calls.read")).toBe(403);
      expect(await head(narrower.access_token, "confd.users.me.read")).toBe(204);
      // Asking for what the user is denied gives nothing of it.
      const denied = await codeFlow(web, "openid acl:confd.admin.#");
      expect(await head(denied.tokens.access_token, "confd.admin.x")).toBe(403);
      // No ACL scope: the user's whole ACL, as POST /0.1/token gives it.
      const whole = await codeFlow(web, "openid");
      expect(await head(whole.tokens.access_token, "confd.users.read")).toBe(204);
      expect(await head(whole.tokens.access_token, "confd.admin.x")).toBe(403);
      // An ACL scope the client may not ask for is refused at the authorization endpoint.
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT,
        scope: "openid acl:#",
        code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
        code_challenge_method: "S256",
      });
      const page = await openLoginPage(url.toString());
      expect(page.status).toBe(303);
      expect(page.headers.get("location")).toContain("error=invalid_scope");
    });

    test("a registered ACL scope covers the narrower patterns asked (acl:confd.# → acl:confd.users.read), never a wider or other one; on the code, the refresh, the device and client credentials", async () => {
      const broad = await register({
        name: "Broad",
        grant_types: ["authorization_code", "refresh_token", DEVICE],
        scopes: ["openid", "offline_access", "acl:confd.#", "acl:calld.calls.*"],
      });
      const { config, tokens } = await codeFlow(broad, "openid offline_access acl:confd.users.read");
      expect(tokens.scope).toBe("openid offline_access acl:confd.users.read");
      expect(await head(tokens.access_token, "confd.users.read")).toBe(204);
      expect(await head(tokens.access_token, "confd.users.create")).toBe(403); // Alice has it, not asked
      // `*` and `#` inside the asked pattern, still within a registered one.
      const wild = await codeFlow(broad, "openid acl:confd.*.read acl:calld.calls.read");
      expect(await head(wild.tokens.access_token, "confd.lines.read")).toBe(204);
      expect(await head(wild.tokens.access_token, "calld.calls.read")).toBe(204);
      // Refused at the authorization endpoint: wider, beside, or the registered pattern's own prefix.
      for (const scope of ["acl:#", "acl:calld.#", "acl:confd", "acl:calld.calls.read.more", "acl:calld.calls.#"]) {
        const url = oidc.buildAuthorizationUrl(config, {
          redirect_uri: REDIRECT,
          scope: `openid ${scope}`,
          code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
          code_challenge_method: "S256",
        });
        const page = await openLoginPage(url.toString());
        expect(page.status).toBe(303);
        expect(page.headers.get("location")).toContain("error=invalid_scope");
      }
      // The refresh: narrower than the grant's pattern is allowed, wider is invalid_scope.
      const narrower = await oidc.refreshTokenGrant(config, tokens.refresh_token!, {
        scope: "openid acl:confd.users.read",
      });
      expect(await head(narrower.access_token, "confd.users.read")).toBe(204);
      const wider = await tokenEndpoint(
        { grant_type: "refresh_token", refresh_token: tokens.refresh_token!, scope: "openid acl:confd.#" },
        { Authorization: `Basic ${btoa(`${broad.client_id}:${broad.client_secret}`)}` },
      );
      expect(wider.status).toBe(400);
      expect((await wider.json()).error).toBe("invalid_scope");
      // The device authorization request follows the same rule.
      const device = (scope: string) =>
        fetch(`${issuer.href}/device_authorization`, {
          method: "POST",
          body: new URLSearchParams({ scope }),
          headers: { Authorization: `Basic ${btoa(`${broad.client_id}:${broad.client_secret}`)}` },
        });
      expect((await device("openid acl:confd.users.read")).status).toBe(200);
      expect((await (await device("openid acl:calld.#")).json()).error).toBe("invalid_scope");
      // Client credentials: `acl:calld.#` registered covers `acl:calld.calls.read`.
      const cc = await tokenEndpoint(
        { grant_type: "client_credentials", scope: "acl:calld.calls.read" },
        { Authorization: `Basic ${btoa(`${service.client_id}:${service.client_secret}`)}` },
      );
      const ccToken = (await cc.json()).access_token;
      expect(await head(ccToken, "calld.calls.read")).toBe(204);
      expect(await head(ccToken, "calld.calls.delete")).toBe(403);
    });

    test("deleting a client ends what it was given: its tokens' sessions and its refresh tokens", async () => {
      const t = get();
      const doomed = await register({ name: "Doomed", scopes: ["openid", "offline_access"] });
      const { config, tokens } = await codeFlow(doomed, "openid offline_access");
      const renewed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
      expect(await head(renewed.access_token)).toBe(204);
      expect((await t.request("DELETE", `/0.1/oidc/clients/${doomed.client_id}`, { token: admin })).status).toBe(204);
      for (const access of [tokens.access_token, renewed.access_token]) expect(await head(access)).toBe(404);
      const families = await t.app.db.select().from(refreshTokens).where(eq(refreshTokens.clientId, doomed.client_id));
      expect(families).toEqual([]);
      // Others' tokens stay.
      const other = await codeFlow(web, "openid");
      expect(await head(other.tokens.access_token)).toBe(204);
    });

    test("narrowAcl: never wider than the holder's ACL nor than the patterns asked", () => {
      const acl = ["confd.#", "calld.calls.read", "!confd.admin.#"];
      expect(narrowAcl(acl, null, {})).toEqual(acl);
      expect(narrowAcl(acl, ["confd.users.*.read"], {})).toEqual(["confd.users.*.read", "!confd.admin.#"]);
      expect(narrowAcl(acl, ["calld.#"], {})).toEqual(["calld.calls.read", "!confd.admin.#"]);
      // Partial overlap (calld.*.read vs calld.calls.#): dropped, never widened.
      expect(narrowAcl(["calld.*.read"], ["calld.calls.#"], {})).toEqual([]);
      expect(narrowAcl(acl, ["amid.#"], {})).toEqual(["!confd.admin.#"]);
      expect(narrowAcl(["confd.users.me.read"], ["confd.users.u1.read"], { authId: "u1" })).toEqual([
        "confd.users.u1.read",
      ]);
    });

    test("client credentials: a session of the client with its ACL (narrowed by ACL scopes), checked by HEAD /0.1/token", async () => {
      const config = await configOf(service);
      const tokens = await oidc.clientCredentialsGrant(config);
      expect(tokens.refresh_token).toBeUndefined();
      expect(tokens.id_token).toBeUndefined();
      expect(await head(tokens.access_token, "confd.users.read")).toBe(204);
      expect(await head(tokens.access_token, "calld.calls.delete")).toBe(204);
      expect(await head(tokens.access_token, "confd.users.delete")).toBe(403);
      const narrowed = await oidc.clientCredentialsGrant(config, { scope: "acl:calld.#" });
      expect(narrowed.scope).toBe("acl:calld.#");
      expect(await head(narrowed.access_token, "calld.calls.delete")).toBe(204);
      expect(await head(narrowed.access_token, "confd.users.read")).toBe(403);
      expect((await oauthError(oidc.clientCredentialsGrant(config, { scope: "acl:#" }))).error).toBe("invalid_scope");
      // Introspection: the client is the subject; revocation ends the session.
      const info = await oidc.tokenIntrospection(config, tokens.access_token);
      expect(info).toMatchObject({ active: true, sub: service.client_id, client_id: service.client_id });
      expect(info.tenant_uuid).toBe(tenant);
      await oidc.tokenRevocation(config, tokens.access_token);
      expect(await head(tokens.access_token)).toBe(404);
      // A wrong secret: 401 invalid_client with WWW-Authenticate.
      const wrong = await tokenEndpoint(
        { grant_type: "client_credentials" },
        { Authorization: `Basic ${btoa(`${service.client_id}:nope`)}` },
      );
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get("www-authenticate")).toMatch(/^Basic /);
      // A public client cannot be registered for it (RFC 6749 §4.4), nor can one not registered for it use it.
      const pub = await get().request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: { name: "p", client_type: "public", redirect_uris: [], grant_types: ["client_credentials"] },
      });
      expect(pub.status).toBe(400);
      expect((await oauthError(oidc.clientCredentialsGrant(await configOf(web)))).error).toBe("unauthorized_client");
    });

    test("concurrent client credentials grants share one statement; each is its own token, audited, evented and revocable alone", async () => {
      const t = get();
      const client = (await findClient(t.app, service.client_id))!;
      const origin = { userAgent: "concurrent", remoteAddr: "127.0.0.1", forwarded: false };
      const before = boundStatements();
      const granted = await Promise.all(
        Array.from({ length: 8 }, () => clientCredentialsToken(t.app, client, {}, origin)),
      );
      // One round trip and one commit for the eight (PGlite), or for each six of them (PostgreSQL).
      expect(boundStatements() - before).toBe(Math.ceil(8 / MAX_SETS[t.app.database.kind]));
      const ids = granted.map((g) => g.access_token);
      expect(new Set(ids).size).toBe(8);
      for (const id of ids) expect(await head(id, "calld.calls.read")).toBe(204);
      // Each its own session: revoking one leaves the others.
      const config = await configOf(service);
      await oidc.tokenRevocation(config, ids[0]!);
      expect(await head(ids[0]!)).toBe(404);
      for (const id of ids.slice(1)) expect(await head(id)).toBe(204);
      const sessions = await Promise.all(
        ids.slice(1).map(async (id) => (await oidc.tokenIntrospection(config, id)).session_uuid as string),
      );
      expect(new Set(sessions).size).toBe(7);
      // Each grant's login in the audit trail and its session's event in the outbox.
      const r = await t.request("GET", `/0.1/audit?action=login.success&target_uuid=${service.client_id}&limit=100`, {
        token: admin,
      });
      const audited = new Set(
        (r.json.items as Array<{ actor: { session_uuid: string } }>).map((e) => e.actor.session_uuid),
      );
      for (const s of sessions) expect(audited.has(s)).toBe(true);
      const events = new Set(
        (await listRecordedEvents(t.app.db))
          .filter((e) => e.name === "auth_session_created")
          .map((e) => e.payload.data.uuid as string),
      );
      for (const s of sessions) expect(events.has(s)).toBe(true);
      expect((await verifyAudit(t.app)).ok).toBe(true); // the chains hold, entries written together
    });

    test("the token endpoint's decisions are in the audit trail: the client's login, a refused secret, a replayed code, a family revoked on reuse and by its client", async () => {
      const t = get();
      type Entry = {
        action: string;
        outcome: string;
        target: { kind: string | null; uuid: string | null };
        actor: { session_uuid: string | null; tenant_uuid: string | null; address: string | null };
        changes: Array<{ field: string; new: unknown }>;
      };
      const audit = async (query: string): Promise<Entry[]> => {
        const r = await t.request("GET", `/0.1/audit?${query}&limit=100`, { token: admin });
        expect(r.status).toBe(200);
        return r.json.items;
      };
      const change = (e: Entry | undefined, field: string) => e?.changes.find((c) => c.field === field)?.new;
      // Client credentials: the client's login, with the session it opened.
      const config = await configOf(service);
      const granted = await oidc.clientCredentialsGrant(config);
      const session = (await oidc.tokenIntrospection(config, granted.access_token)).session_uuid;
      const [login] = await audit(`action=login.success&target_uuid=${service.client_id}`);
      expect(login).toMatchObject({ outcome: "success", target: { kind: "oidc_client", uuid: service.client_id } });
      expect(login!.actor).toMatchObject({ session_uuid: session, tenant_uuid: tenant });
      expect(change(login, "grant_type")).toBe("client_credentials");
      // A wrong secret: a refused login of the client, the secret nowhere.
      const wrong = await tokenEndpoint(
        { grant_type: "client_credentials" },
        { Authorization: `Basic ${btoa(`${service.client_id}:guessed-secret-1`)}` },
      );
      expect(wrong.status).toBe(401);
      const [refused] = await audit(`action=login.failure&target_uuid=${service.client_id}`);
      expect(refused).toMatchObject({ outcome: "invalid_credentials", target: { kind: "oidc_client" } });
      expect(JSON.stringify(await audit("action=login.*"))).not.toContain("guessed-secret-1");
      // A code exchanged twice: the second exchange revokes the session, recorded with the reason.
      const { tokens: first, back, verifier } = await codeFlow(web, "openid");
      const replay = await tokenEndpoint(
        {
          grant_type: "authorization_code",
          code: back.searchParams.get("code")!,
          redirect_uri: REDIRECT,
          code_verifier: verifier,
        },
        { Authorization: `Basic ${btoa(`${web.client_id}:${web.client_secret}`)}` },
      );
      expect(replay.status).toBe(400);
      expect(await head(first.access_token)).toBe(404);
      const revoked = (await audit("action=token.revoke")).find(
        (e) => change(e, "reason") === "authorization code replayed",
      );
      expect(revoked).toMatchObject({ target: { kind: "session" } });
      expect(change(revoked, "client_id")).toBe(web.client_id);
      // A rotated refresh token presented again: the family goes, recorded against alice.
      const phoneFlow = await codeFlow(phone, "openid offline_access", APP_REDIRECT);
      const rotated = await oidc.refreshTokenGrant(phoneFlow.config, phoneFlow.tokens.refresh_token!);
      // Its successor used: no grace period for a retry of the first any more (RFC 9700 §4.14.2).
      await oidc.refreshTokenGrant(phoneFlow.config, rotated.refresh_token!);
      await oauthError(oidc.refreshTokenGrant(phoneFlow.config, phoneFlow.tokens.refresh_token!));
      const families = await audit(`action=refresh_token.revoke&target_uuid=${alice}`);
      expect(families.map((e) => [change(e, "client_id"), change(e, "reason")])).toContainEqual([
        phone.client_id,
        "a rotated refresh token was presented again",
      ]);
      // Revoked by its client (RFC 7009).
      const webFlow = await codeFlow(web, "openid offline_access");
      await oidc.tokenRevocation(webFlow.config, webFlow.tokens.refresh_token!, { token_type_hint: "refresh_token" });
      expect(
        (await audit(`action=refresh_token.revoke&target_uuid=${alice}`)).map((e) => change(e, "reason")),
      ).toContain("revoked by its client (RFC 7009)");
      // Another tenant's administrator sees none of it.
      const other = await t.request("GET", `/0.1/audit?target_uuid=${service.client_id}`, { token: otherAdmin });
      expect([other.status, other.json.items]).toEqual([200, []]);
    });

    test("the client's ACL follows the grant rule, and another tenant's administrator can neither see nor change it", async () => {
      const t = get();
      const limited = (await tokenFor(t.app, { acl: ["auth.#", "calld.calls.read"], tenantUuid: tenant })).token;
      const refused = await t.request("POST", "/0.1/oidc/clients", {
        token: limited,
        body: { name: "x", client_type: "confidential", grant_types: ["client_credentials"], acl: ["calld.#"] },
      });
      expect(refused.status).toBe(403);
      expect(refused.json.details.required_access).toBe("calld.#");
      const ok = await t.request("POST", "/0.1/oidc/clients", {
        token: limited,
        body: {
          name: "x",
          client_type: "confidential",
          grant_types: ["client_credentials"],
          acl: ["calld.calls.read"],
        },
      });
      expect(ok.status).toBe(201);
      expect(ok.json.acl).toEqual(["calld.calls.read"]);
      const body = { name: "x", grant_types: ["client_credentials"] };
      // Adding what it cannot grant, or taking out what it could not grant: 403, nothing changed.
      const widen = await t.request("PUT", `/0.1/oidc/clients/${service.client_id}`, {
        token: limited,
        body: { ...body, acl: ["confd.users.read", "calld.#", "confd.#"] },
      });
      expect(widen.status).toBe(403);
      const shrink = await t.request("PUT", `/0.1/oidc/clients/${service.client_id}`, {
        token: limited,
        body: { ...body, acl: ["calld.#"] },
      });
      expect(shrink.status).toBe(403);
      expect((await t.request("GET", `/0.1/oidc/clients/${service.client_id}`, { token: admin })).json.acl).toEqual([
        "confd.users.read",
        "calld.#",
      ]);
      // Another tenant's administrator (auth.#): 404 on read and update, absent from its list.
      expect((await t.request("GET", `/0.1/oidc/clients/${service.client_id}`, { token: otherAdmin })).status).toBe(
        404,
      );
      const foreign = await t.request("PUT", `/0.1/oidc/clients/${service.client_id}`, {
        token: otherAdmin,
        body: { ...body, acl: [] },
      });
      expect(foreign.status).toBe(404);
      const list = await t.request("GET", "/0.1/oidc/clients", { token: otherAdmin });
      expect(list.json.items.map((c: { client_id: string }) => c.client_id)).not.toContain(service.client_id);
      // PUT without `acl` keeps it.
      expect(
        (
          await t.request("PUT", `/0.1/oidc/clients/${service.client_id}`, {
            token: admin,
            body: {
              name: "Billing daemon",
              redirect_uris: [],
              grant_types: ["client_credentials"],
              scopes: ["acl:calld.#"],
            },
          })
        ).status,
      ).toBe(204);
      expect((await t.request("GET", `/0.1/oidc/clients/${service.client_id}`, { token: admin })).json.acl).toEqual([
        "confd.users.read",
        "calld.#",
      ]);
    });

    test("device flow: openid-client polls while the person allows it on the verification page", async () => {
      const config = await configOf(tv);
      const start = await oidc.initiateDeviceAuthorization(config, { scope: "openid profile offline_access" });
      expect(start.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
      expect(start.verification_uri).toBe(`${issuer.href}/device`);
      expect(start.interval).toBe(1);
      const polling = oidc.pollDeviceAuthorizationGrant(config, start);
      await Bun.sleep(1_500); // a poll or two answered authorization_pending meanwhile
      const answer = await answerDevicePage(start.verification_uri_complete!, "alice", "alice-secret");
      expect(answer.status).toBe(200);
      expect(answer.html).toContain("Device connected");
      const tokens = await polling;
      expect(tokens.claims()).toMatchObject({ sub: alice, aud: tv.client_id, preferred_username: "alice" });
      expect(await head(tokens.access_token, "confd.users.read")).toBe(204);
      expect(tokens.refresh_token).toBeString();
      expect((await oidc.refreshTokenGrant(config, tokens.refresh_token!)).access_token).toBeString();
      // Collected once: the same device code again is invalid_grant.
      const again = await tokenEndpoint(
        { grant_type: DEVICE, device_code: start.device_code },
        { Authorization: `Basic ${btoa(`${tv.client_id}:${tv.client_secret}`)}` },
      );
      expect((await again.json()).error).toBe("invalid_grant");
    }, 30_000);

    test("device flow: authorization_pending, slow_down, access_denied, expired_token, another client's code", async () => {
      const t = get();
      const config = await configOf(tv);
      const basic = { Authorization: `Basic ${btoa(`${tv.client_id}:${tv.client_secret}`)}` };
      const poll = async (deviceCode: string) =>
        (await tokenEndpoint({ grant_type: DEVICE, device_code: deviceCode }, basic)).json() as Promise<{
          error: string;
        }>;
      const start = await oidc.initiateDeviceAuthorization(config, { scope: "openid" });
      expect((await poll(start.device_code)).error).toBe("authorization_pending");
      expect((await poll(start.device_code)).error).toBe("slow_down"); // within the interval
      const [row] = await t.app.db
        .select()
        .from(oidcDeviceCodes)
        .where(eq(oidcDeviceCodes.userCode, start.user_code.replace("-", "")));
      expect(row!.interval).toBe(6); // RFC 8628 §3.5: +5 s
      // Another client polling with this device code.
      const other = await tokenEndpoint({
        grant_type: DEVICE,
        device_code: start.device_code,
        client_id: phone.client_id,
      });
      expect((await other.json()).error).toBe("invalid_grant");
      // Denied by the person.
      const denied = await answerDevicePage(start.verification_uri_complete!, "", "", "deny");
      expect(denied.html).toContain("Request denied");
      expect((await poll(start.device_code)).error).toBe("access_denied");
      // Expired.
      const late = await oidc.initiateDeviceAuthorization(config, { scope: "openid" });
      await t.app.db
        .update(oidcDeviceCodes)
        .set({ expiresAt: new Date(Date.now() - 1000) })
        .where(eq(oidcDeviceCodes.userCode, late.user_code.replace("-", "")));
      expect((await poll(late.device_code)).error).toBe("expired_token");
      expect((await answerDevicePage(late.verification_uri_complete!, "alice", "alice-secret")).status).toBe(400);
      // Unknown device code; a client without the device grant.
      expect((await poll("nope")).error).toBe("invalid_grant");
      const refused = await fetch(`${issuer.href}/device_authorization`, {
        method: "POST",
        body: new URLSearchParams({ client_id: web.client_id, client_secret: web.client_secret! }),
      });
      expect((await refused.json()).error).toBe("unauthorized_client");
    }, 30_000);

    test("device flow verification page: a user of another tenant gets the generic failure and no token; wrong codes and forged forms are refused", async () => {
      const config = await configOf(foreignTv);
      const start = await oidc.initiateDeviceAuthorization(config, { scope: "openid offline_access" });
      // Alice is not of the foreign client's tenant.
      const alien = await answerDevicePage(start.verification_uri_complete!, "alice", "alice-secret");
      expect(alien.status).toBe(401);
      expect(alien.html).toContain("Wrong username or password.");
      const poll = await tokenEndpoint({
        grant_type: DEVICE,
        device_code: start.device_code,
        client_id: foreignTv.client_id,
        client_secret: foreignTv.client_secret!,
      });
      expect((await poll.json()).error).toBe("authorization_pending");
      // Alice's failed sign-in left no refresh token family for that client either.
      const families = await get()
        .app.db.select()
        .from(refreshTokens)
        .where(eq(refreshTokens.clientId, foreignTv.client_id));
      expect(families).toEqual([]);
      // Wrong password: the generic failure.
      const wrong = await answerDevicePage(start.verification_uri_complete!, "bob", "nope");
      expect(wrong.status).toBe(401);
      // Unknown code: the code step again, 400.
      const unknown = await fetch(`${issuer.href}/device?user_code=BBBB-BBBB`);
      expect(unknown.status).toBe(400);
      expect(await unknown.text()).toContain("That code is not valid");
      // A form without its CSRF cookie.
      const forged = await fetch(`${issuer.href}/device`, {
        method: "POST",
        body: new URLSearchParams({
          user_code: start.user_code,
          username: "bob",
          password: "bob-secret",
          action: "allow",
          csrf_token: "x".repeat(43),
        }),
      });
      expect(forged.status).toBe(400);
      // The page: strict CSP, no framing, works as plain forms.
      const page = await fetch(`${issuer.href}/device`);
      expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(page.headers.get("x-frame-options")).toBe("DENY");
      const bob = await answerDevicePage(start.verification_uri_complete!, "bob", "bob-secret");
      expect(bob.status).toBe(200);
    });

    test("introspection's shortcut before the router answers exactly what the route answers", async () => {
      const { tokens } = await codeFlow(web, "openid");
      const basic = `Basic ${btoa(`${web.client_id}:${web.client_secret}`)}`;
      const post = (body: string, authorization = basic) =>
        fetch(`${issuer.href}/introspect`, {
          method: "POST",
          body,
          headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: authorization },
        });
      const seen = async (r: Response) => [
        r.status,
        await r.json(),
        r.headers.get("content-type"),
        r.headers.get("cache-control"),
        r.headers.get("www-authenticate"),
      ];
      for (const token of [tokens.access_token, tokens.access_token, "nope", crypto.randomUUID()]) {
        const fast = await seen(await post(`token=${token}`));
        const routed = await seen(await post(`token=${token}&other=1`)); // another field: the full route
        expect(fast).toEqual(routed);
      }
      expect((await (await post(`token=${tokens.access_token}`)).json()).active).toBe(true);
      const wrong = await post(`token=${tokens.access_token}`, `Basic ${btoa(`${web.client_id}:nope`)}`);
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get("www-authenticate")).toMatch(/^Basic /);
      const publicClient = await post(`token=${tokens.access_token}`, `Basic ${btoa(`${phone.client_id}:`)}`);
      expect(publicClient.status).toBe(401);
    });

    test("introspection's memos (the verified Basic header, the answer on the cached token) never outlive a revoked token, a deleted client or another client", async () => {
      const t = get();
      const rs = await register({ name: "Resource server", redirect_uris: [], grant_types: ["client_credentials"] });
      const other = await register({ name: "Other RS", redirect_uris: [], grant_types: ["client_credentials"] });
      const { tokens } = await codeFlow(web, "openid");
      const introspect = (client: Registered, token: string, secret = client.client_secret!) =>
        fetch(`${issuer.href}/introspect`, {
          method: "POST",
          body: `token=${token}`,
          headers: {
            "Content-Type": "application/x-www-form-urlencoded",
            Authorization: `Basic ${btoa(`${client.client_id}:${secret}`)}`,
          },
        });
      for (let i = 0; i < 3; i++) expect((await (await introspect(rs, tokens.access_token)).json()).active).toBe(true);
      // Another client, another issuer-independent answer: its own, not the memo of the first.
      const answer = await (await introspect(other, tokens.access_token)).json();
      expect(answer).toMatchObject({ active: true, client_id: web.client_id });
      expect((await introspect(rs, tokens.access_token, "wrong")).status).toBe(401);
      // The token revoked: inactive at once, memo or not.
      expect((await t.request("DELETE", `/0.1/token/${tokens.access_token}`)).status).toBe(200);
      expect(await (await introspect(rs, tokens.access_token)).json()).toEqual({ active: false });
      // The client deleted: the header verified a moment ago no longer authenticates.
      expect((await t.request("DELETE", `/0.1/oidc/clients/${rs.client_id}`, { token: admin })).status).toBe(204);
      const gone = await introspect(rs, tokens.access_token);
      expect(gone.status).toBe(401);
      expect((await gone.json()).error).toBe("invalid_client");
    });

    test("introspection answers for refresh tokens (token_type_hint), to their client only; revocation of a refresh token ends its grant", async () => {
      const { config, tokens } = await codeFlow(phone, "openid offline_access", APP_REDIRECT);
      const webConfig = await configOf(web);
      // Introspection needs an authenticated client: the public phone client cannot, and web is not its client.
      const byOther = await oidc.tokenIntrospection(webConfig, tokens.refresh_token!, {
        token_type_hint: "refresh_token",
      });
      expect(byOther.active).toBe(false);
      // The web client's own refresh token is described to it.
      const own = await codeFlow(web, "openid offline_access");
      for (const hint of [{ token_type_hint: "refresh_token" }, {}] as Record<string, string>[]) {
        const info = await oidc.tokenIntrospection(webConfig, own.tokens.refresh_token!, hint);
        expect(info).toMatchObject({ active: true, token_type: "refresh_token", client_id: web.client_id, sub: alice });
      }
      // Revocation (RFC 7009) of the refresh token by the public client: its grant and sessions end.
      await oidc.tokenRevocation(config, tokens.refresh_token!, { token_type_hint: "refresh_token" });
      expect(await head(tokens.access_token)).toBe(404);
      expect((await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token!))).error).toBe("invalid_grant");
      // Revoking another client's refresh token does nothing (the same 200).
      await oidc.tokenRevocation(config, own.tokens.refresh_token!);
      const still = await oidc.tokenIntrospection(webConfig, own.tokens.refresh_token!);
      expect(still.active).toBe(true);
      await oidc.tokenRevocation(webConfig, own.tokens.refresh_token!);
      expect((await oidc.tokenIntrospection(webConfig, own.tokens.refresh_token!)).active).toBe(false);
    });
  },
  { config: { oidc: { device_poll_interval: 1 } } },
);

describeEachDb(
  "OpenID Connect device verification page throttling",
  (get) => {
    test("wrong user codes count as failed logins from the address: past the threshold even a right code gets 429", async () => {
      const t = get();
      const served = serveApp(t);
      try {
        const tenant = await createTenantRow(t.app);
        const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
        const client = (
          await t.request("POST", "/0.1/oidc/clients", {
            token: admin,
            body: { name: "tv", client_type: "public", grant_types: [DEVICE] },
          })
        ).json;
        const issuer = `${served.url}/0.1/oidc`;
        const start = await fetch(`${issuer}/device_authorization`, {
          method: "POST",
          body: new URLSearchParams({ client_id: client.client_id }),
        });
        const { verification_uri_complete: complete, verification_uri: page } = await start.json();
        for (const guess of ["BBBB-BBBB", "CCCC-CCCC", "not a code"])
          expect((await fetch(`${page}?user_code=${encodeURIComponent(guess)}`)).status).toBe(400);
        const locked = await fetch(complete);
        expect(locked.status).toBe(429);
        expect(await locked.text()).toContain("Too many attempts");
      } finally {
        await served.stop();
      }
    });
  },
  { config: { login_throttling: { exempt_addresses: [], max_failures_per_address: 3 } } },
);
