// Trusting an upstream OpenID provider's `amr` (docs/federation.md "Multi-factor"): in a tenant that
// requires MFA, a provider configured with `trust_amr` whose ID token shows a multi-factor authentication
// (RFC 8176 `mfa`, or two factor classes) signs the user in without Tessera's second step or enrolment,
// and Tessera's ID token says `oidc mfa`; without the setting, or without such an `amr`, the second step
// (or the enrolment) is asked as before. The same rule at POST /0.1/token with `idp_token`. A real
// upstream (panva's oidc-provider in a child process) puts the `amr` the test chooses in its ID tokens.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import * as oidc from "openid-client";
import { upstreamOidcLinks, users } from "../../src/db/schema.ts";
import { MFA_ENROL_ONLY_ACL } from "../../src/services/auth/mfa-policy.ts";
import { currentCode } from "../../src/services/auth/totp.ts";
import { amrOf, isMultiFactor } from "../../src/services/integrations/upstream-oidc/amr.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import {
  apiCall,
  discoverClient,
  followRedirects,
  serveApp,
  type ServedApp,
  startAuthorization,
  TestBrowser,
} from "../helpers/oidc.ts";
import { startUpstreamOidc, type UpstreamOidc } from "../helpers/upstream-oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
const LOCAL = { outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true } };
const MFA_KEYS = { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 5).toString("base64") }] };
const unescapeAmp = (s: string) => s.replaceAll("&amp;", "&");

describe("which upstream amr shows a multi-factor authentication (RFC 8176)", () => {
  test("mfa, or two distinct factor classes; never one class twice, user presence or a single method", () => {
    expect(isMultiFactor(["mfa"])).toBe(true);
    expect(isMultiFactor(["pwd", "otp"])).toBe(true);
    expect(isMultiFactor(["hwk", "pin"])).toBe(true);
    expect(isMultiFactor(["swk", "fpt"])).toBe(true);
    expect(isMultiFactor(["pwd"])).toBe(false);
    expect(isMultiFactor(["pwd", "kba"])).toBe(false); // both something you know
    expect(isMultiFactor(["otp", "sms"])).toBe(false); // both something you have
    expect(isMultiFactor(["hwk", "user"])).toBe(false); // a security key's touch: presence, not a factor
    expect(isMultiFactor(["hwk"])).toBe(false);
    expect(isMultiFactor(["pwd", "geo", "rba"])).toBe(false);
    expect(isMultiFactor(null)).toBe(false);
    expect(amrOf("pwd otp")).toBeNull(); // not an array (RFC 8176 §1: a JSON array of strings)
    expect(amrOf(["pwd", 7, "otp", "pwd"])).toEqual(["pwd", "otp"]);
  });
});

describeEachDb(
  "trusting an upstream provider's amr in a tenant that requires MFA",
  (get) => {
    let served: ServedApp;
    let issuer: URL;
    let upstream: UpstreamOidc;
    let tenant: string;
    let admin: string;
    let config: oidc.Configuration;
    let provider: string;
    let creds: { client_id: string; client_secret: string };
    let redirectUri: string;
    let tina: string;
    let totpSecret: string;
    let nico: string;
    const base = { name: "corp", display_name: "Corp SSO", provisioning: "link" };

    const api = (method: string, path: string, token: string, body?: unknown) =>
      apiCall(served.url, method, path, token, body);

    /** The provider's `trust_amr`, set as an administrator sets it (PUT; the stored secret kept). */
    const trust = async (on: boolean) => {
      const put = await api("PUT", `/0.1/backends/oidc/${provider}`, admin, {
        ...base,
        issuer: upstream.issuer,
        client_id: creds.client_id,
        trust_amr: on,
      });
      expect(put.status).toBe(204);
    };

    /** A user of the tenant linked to the upstream account of the same name (method oidc). */
    const linkedUser = async (name: string) => {
      const t = get();
      const uuid = await createUserRow(t.app, { tenantUuid: tenant, username: name });
      await t.app.db.update(users).set({ authenticationMethod: "oidc" }).where(eq(users.uuid, uuid));
      await t.app.db.insert(upstreamOidcLinks).values({ providerUuid: provider, subject: name, userUuid: uuid });
      return uuid;
    };

    beforeAll(async () => {
      const t = get();
      served = serveApp(t);
      issuer = new URL(`${served.url}/0.1/oidc`);
      upstream = await startUpstreamOidc({ accounts: { tina: {}, nico: {} } });
      tenant = await createTenantRow(t.app);
      admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      expect((await api("PUT", `/0.1/tenants/${tenant}/mfa`, admin, { mfa: "required" })).status).toBe(204);
      const client = await api("POST", "/0.1/oidc/clients", admin, {
        name: "RP",
        client_type: "confidential",
        redirect_uris: [REDIRECT],
        first_party: true,
      });
      config = await discoverClient(issuer, client.json);
      const made = await api("POST", "/0.1/backends/oidc", admin, {
        ...base,
        issuer: upstream.issuer,
        client_id: "pending",
        client_secret: "pending",
      });
      expect(made.status).toBe(201);
      expect(made.json.trust_amr).toBe(false);
      provider = made.json.uuid;
      redirectUri = made.json.redirect_uri;
      creds = await upstream.register([redirectUri]);
      const put = await api("PUT", `/0.1/backends/oidc/${provider}`, admin, {
        ...base,
        issuer: upstream.issuer,
        ...creds,
      });
      expect(put.status).toBe(204);
      // tina has TOTP; nico has no factor (the tenant's requirement would have him enrol).
      tina = await linkedUser("tina");
      nico = await linkedUser("nico");
      // A policy of his own, so that a whole token's ACL differs from the enrol-only one.
      const root = (await tokenFor(t.app, { acl: ["#"] })).token;
      const policy = await t.request("POST", "/0.1/policies", {
        token: root,
        tenant,
        body: { name: "nico-policy", acl: ["confd.users.me.read"] },
      });
      expect(policy.status).toBe(200);
      expect(
        (await t.request("PUT", `/0.1/users/${nico}/policies/${policy.json.uuid}`, { token: root, tenant })).status,
      ).toBe(204);
      const own = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: tina, tenantUuid: tenant })).token;
      totpSecret = (await t.request("POST", "/0.1/users/me/mfa/totp", { token: own })).json.secret;
      const confirmed = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
        token: own,
        body: { code: currentCode(totpSecret, Date.now() - 30_000) },
      });
      expect(confirmed.status).toBeLessThan(300);
    });
    afterAll(async () => {
      served?.stop();
      await upstream?.stop();
    });

    /** Follows redirects as a browser does until a page, or the redirect back to the relying party. */
    const follow = (browser: TestBrowser, url: string) => followRedirects(browser, url);

    /** The hosted sign-in through the provider, the upstream answering for `account` with `amr`. */
    const signIn = async (account: string, amr: string[] | null, browser = new TestBrowser(served.url)) => {
      await upstream.set({ account, tamper: null, amr });
      const flow = await startAuthorization(config, REDIRECT, { scope: "openid profile" });
      const shown = await browser.get(flow.url);
      const button = /<a class="button secondary" href="([^"]+)">Continue with Corp SSO<\/a>/.exec(shown.html);
      expect(button).not.toBeNull();
      const end = await follow(browser, `${issuer.href}/${unescapeAmp(button![1]!)}`);
      return { flow, end, browser };
    };

    const idTokenOf = async (flow: Awaited<ReturnType<typeof startAuthorization>>, location: URL) =>
      (
        await oidc.authorizationCodeGrant(config, location, {
          pkceCodeVerifier: flow.verifier,
          expectedState: flow.state,
          expectedNonce: flow.nonce,
        })
      ).claims()!;

    test("trusted provider, amr pwd otp: signed in without the TOTP step; Tessera's amr says oidc mfa", async () => {
      await trust(true);
      const { flow, end } = await signIn("tina", ["pwd", "otp"]);
      expect(end.res.status).toBe(303);
      expect(end.location!.origin).toBe("https://rp.example.com");
      const claims = await idTokenOf(flow, end.location!);
      expect(claims).toMatchObject({ sub: tina, amr: ["oidc", "mfa"] });
    });

    test("trusted provider, amr pwd only: the TOTP step is asked", async () => {
      await trust(true);
      const { end } = await signIn("tina", ["pwd"]);
      expect(end.res.status).toBe(200);
      expect(end.html).toContain('name="pending"');
      expect(end.html).toContain('name="code"');
    });

    test("untrusted provider, amr mfa: the TOTP step is asked", async () => {
      await trust(false);
      const { end } = await signIn("tina", ["mfa"]);
      expect(end.res.status).toBe(200);
      expect(end.html).toContain('name="pending"');
      expect(end.html).toContain('name="code"');
    });

    test("a user with no factor: trusted mfa signs in without enrolment; untrusted asks to enrol", async () => {
      await trust(true);
      const trusted = await signIn("nico", ["mfa"]);
      expect(trusted.end.res.status).toBe(303);
      expect(trusted.end.location!.origin).toBe("https://rp.example.com");
      expect(await idTokenOf(trusted.flow, trusted.end.location!)).toMatchObject({ sub: nico, amr: ["oidc", "mfa"] });
      // Single sign-on from that browser session later, and its refresh: still whole tokens, not enrol-only.
      const flow = await startAuthorization(config, REDIRECT, { scope: "openid profile offline_access" });
      const sso = await follow(trusted.browser, flow.url);
      expect(sso.location!.origin).toBe("https://rp.example.com");
      const tokens = await oidc.authorizationCodeGrant(config, sso.location!, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
      });
      expect(tokens.claims()).toMatchObject({ sub: nico, amr: ["oidc", "mfa"] });
      const acl = (await get().request("GET", `/0.1/token/${tokens.access_token}`)).json.data.acl;
      expect(acl).toContain("confd.users.me.read");
      expect(acl).not.toEqual(MFA_ENROL_ONLY_ACL);
      const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
      expect(refreshed.claims()).toMatchObject({ sub: nico, amr: ["oidc", "mfa"] });
      const again = (await get().request("GET", `/0.1/token/${refreshed.access_token}`)).json.data.acl;
      expect(again).toContain("confd.users.me.read");
      await trust(false);
      const untrusted = await signIn("nico", ["mfa"]);
      expect(untrusted.end.res.status).toBe(200);
      expect(untrusted.end.html).toContain('name="pending"');
      expect(untrusted.end.html).toContain("data:image/svg+xml"); // the enrolment's QR code
    });

    test("POST /0.1/token with idp_token: the same rule (no mfa_code needed only when trusted and multi-factor)", async () => {
      const t = get();
      const tokenWith = async (amr: string[] | null) => {
        await upstream.set({ account: "tina", tamper: null, amr });
        return upstream.idToken(creds, redirectUri);
      };
      await trust(false);
      const untrusted = await t.request("POST", "/0.1/token", { body: { idp_token: await tokenWith(["pwd", "otp"]) } });
      expect(untrusted.status).toBe(401);
      expect(JSON.stringify(untrusted.json)).toContain("mfa");
      await trust(true);
      const single = await t.request("POST", "/0.1/token", { body: { idp_token: await tokenWith(["pwd"]) } });
      expect(single.status).toBe(401);
      const trusted = await t.request("POST", "/0.1/token", { body: { idp_token: await tokenWith(["pwd", "otp"]) } });
      expect(trusted.status).toBe(200);
      expect(trusted.json.data.auth_id).toBe(tina);
    });

    test("trust_amr is read back, audited, and refused with the github preset (no ID token, no amr)", async () => {
      await trust(true);
      const shown = await api("GET", `/0.1/backends/oidc/${provider}`, admin);
      expect(shown.json.trust_amr).toBe(true);
      const audit = await api("GET", `/0.1/audit?action=backend_oidc.update&target_uuid=${provider}`, admin);
      expect(JSON.stringify(audit.json)).toContain("trust_amr");
      const github = await api("POST", "/0.1/backends/oidc", admin, {
        name: "gh",
        display_name: "GitHub",
        preset: "github",
        issuer: upstream.origin,
        client_id: "x",
        client_secret: "y",
        trust_amr: true,
      });
      expect(github.status).toBe(400);
      expect(github.json.details.trust_amr.constraint_id).toBe("not_applicable");
      expect(github.json.details.trust_amr.message).toContain("GitHub issues no ID token");
      const onUpdate = await api("PUT", `/0.1/backends/oidc/${provider}`, admin, {
        ...base,
        preset: "github",
        issuer: upstream.origin,
        client_id: creds.client_id,
        trust_amr: true,
      });
      expect(onUpdate.status).toBe(400);
    });
  },
  { config: { ...LOCAL, mfa: MFA_KEYS } },
);
