// Logout with a tenant's upstream OpenID provider (docs/federation.md "Logout"), against a real provider
// (panva's oidc-provider in a child process, with its back-channel and RP-initiated logout turned on),
// a browser without JavaScript (helpers/oidc.ts TestBrowser) and a relying party of Tessera (openid-client):
//   - the provider ends its session → its logout token reaches Tessera's back-channel logout URI → the
//     Tessera browser session and sessions of that sign-in end;
//   - the relying party logs out at Tessera → Tessera's sessions end → the browser goes to the provider's
//     end_session_endpoint (id_token_hint, client_id, post_logout_redirect_uri, state) → back to Tessera →
//     on to the relying party's post_logout_redirect_uri with its state;
//   - hostile logout tokens (signature, aud, iss, nonce, events, stale iat, no sub/sid, replayed jti,
//     another provider's) are refused with 400 and end nothing.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import * as oidc from "openid-client";
import { auditEntries, emails, oidcBrowserSessions, upstreamOidcSessions, users } from "../../src/db/schema.ts";
import { currentCode } from "../../src/services/auth/totp.ts";
import { BACKCHANNEL_LOGOUT_EVENT } from "../../src/services/oidc/backchannel.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import {
  apiCall,
  discoverClient,
  hiddenFieldsOf,
  mergeCookies,
  serveApp,
  type ServedApp,
  startAuthorization,
  TestBrowser,
} from "../helpers/oidc.ts";
import { startUpstreamOidc, type UpstreamOidc } from "../helpers/upstream-oidc.ts";
import { until } from "../helpers/wait.ts";

const REDIRECT = "https://rp.example.com/callback";
const POST_LOGOUT = "https://rp.example.com/signed-out";
const LOCAL = { outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true } };
const MFA_KEYS = { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 5).toString("base64") }] };

const unescapeAmp = (s: string) => s.replaceAll("&amp;", "&");

describeEachDb(
  "logout with an upstream OpenID provider",
  (get) => {
    let served: ServedApp;
    let issuer: URL;
    let upstream: UpstreamOidc;
    let admin: string;
    let tenant: string;
    let config: oidc.Configuration;
    let provider: { uuid: string; client_id: string };

    const api = (method: string, path: string, token: string, body?: unknown) =>
      apiCall(served.url, method, path, token, body);

    /** A provider registered at the upstream with the three URIs its representation names (as an administrator does). */
    const addProvider = async (token: string, extra: Record<string, unknown> = {}) => {
      const base = {
        name: `p-${randomUUID()}`,
        display_name: "Corp SSO",
        issuer: upstream.issuer,
        provisioning: "create",
      };
      const made = await api("POST", "/0.1/backends/oidc", token, {
        ...base,
        ...extra,
        client_id: "pending",
        client_secret: "pending",
      });
      if (made.status !== 201) throw new Error(made.text);
      const uuid = made.json.uuid as string;
      expect(made.json.post_logout_redirect_uri).toBe(`${issuer.href}/upstream/${uuid}/logged-out`);
      expect(made.json.backchannel_logout_uri).toBe(`${issuer.href}/upstream/${uuid}/backchannel-logout`);
      const creds = await upstream.register([made.json.redirect_uri], {
        post_logout_redirect_uris: [made.json.post_logout_redirect_uri],
        backchannel_logout_uri: made.json.backchannel_logout_uri,
        backchannel_logout_session_required: true,
      });
      const put = await api("PUT", `/0.1/backends/oidc/${uuid}`, token, { ...base, ...extra, ...creds });
      if (put.status !== 204) throw new Error(put.text);
      return { uuid, client_id: creds.client_id };
    };

    beforeAll(async () => {
      const t = get();
      served = serveApp(t);
      issuer = new URL(`${served.url}/0.1/oidc`);
      upstream = await startUpstreamOidc({
        accounts: {
          alice: { preferred_username: "alice.up", email: "alice@corp.example", email_verified: true },
          carol: { preferred_username: "carol.up", email: "carol@corp.example", email_verified: true },
        },
        features: { backchannelLogout: { enabled: true }, rpInitiatedLogout: { enabled: true } },
      });
      tenant = await createTenantRow(t.app);
      admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const client = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: {
          name: "RP",
          client_type: "confidential",
          redirect_uris: [REDIRECT],
          post_logout_redirect_uris: [POST_LOGOUT],
          first_party: true,
        },
      });
      config = await discoverClient(issuer, client.json);
      provider = await addProvider(admin, { upstream_logout: true });
    });
    afterAll(async () => {
      served?.stop();
      await upstream?.stop();
    });

    /**
     * Follows redirects across Tessera and the provider as a browser does, answering the provider's logout
     * confirmation ("Yes, sign me out", its form posted with its xsrf field), until a page, or a redirect
     * leaving for the relying party (returned, not followed) or matching `stop`.
     */
    const walk = async (browser: TestBrowser, url: string, stop: (u: URL) => boolean = () => false) => {
      let at = new URL(url);
      let res = await fetch(at, { redirect: "manual", headers: { Cookie: browser.cookie } });
      for (let hops = 0; hops < 20; hops++) {
        browser.cookie = mergeCookies(browser.cookie, res);
        const header = res.headers.get("location");
        const html = header ? "" : await res.text();
        if (!header && html.includes('id="op.logoutForm"')) {
          const action = new URL(unescapeAmp(html.match(/action="([^"]+)"/)![1]!), at);
          const xsrf = html.match(/name="xsrf" value="([^"]+)"/)![1]!;
          res = await fetch(action, {
            method: "POST",
            redirect: "manual",
            headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: browser.cookie },
            body: new URLSearchParams({ xsrf, logout: "yes" }),
          });
          at = action;
          continue;
        }
        if (!header || res.status < 300 || res.status >= 400) return { res, html, location: null as URL | null };
        const next = new URL(header, at);
        if (next.origin === "https://rp.example.com" || stop(next)) return { res, html, location: next };
        at = next;
        res = await fetch(at, { redirect: "manual", headers: { Cookie: browser.cookie } });
      }
      throw new Error("too many redirects");
    };

    /** Signs `account` in through the provider's button; the relying party's tokens and the browser. */
    const signIn = async (account: string) => {
      await upstream.set({ account, tamper: null });
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(config, REDIRECT, { scope: "openid profile email" });
      const shown = await browser.get(flow.url);
      const href = [
        ...shown.html.matchAll(/<a class="button secondary" href="([^"]+)">Continue with Corp SSO<\/a>/g),
      ][0];
      expect(href).toBeDefined();
      const end = await walk(browser, `${issuer.href}/${unescapeAmp(href![1]!)}`);
      expect(end.location?.origin).toBe("https://rp.example.com");
      const tokens = await oidc.authorizationCodeGrant(config, end.location!, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
      });
      const sid = tokens.claims()!.sid as string;
      const [upstreamSession] = await get()
        .app.db.select()
        .from(upstreamOidcSessions)
        .where(eq(upstreamOidcSessions.browserSessionId, sid));
      expect(upstreamSession).toBeDefined();
      return { browser, tokens, sid, upstreamSession: upstreamSession! };
    };

    /** Whether Tessera's access token of a sign-in still works (its session alive). */
    const alive = async (accessToken: string) =>
      (await get().request("GET", `/0.1/token/${accessToken}`, { token: admin })).status === 200;
    const browserSessionAlive = async (sid: string) =>
      (await get().app.db.select().from(oidcBrowserSessions).where(eq(oidcBrowserSessions.id, sid))).length === 1;

    test("a sign-in remembers the upstream session (sub, sid, and the ID token for upstream logout)", async () => {
      const { upstreamSession, tokens } = await signIn("alice");
      expect(upstreamSession.providerUuid).toBe(provider.uuid);
      expect(upstreamSession.subject).toBe("alice");
      expect(upstreamSession.sid).toBeString();
      expect(upstreamSession.idToken?.split(".")).toHaveLength(3);
      expect(upstreamSession.completionHash).toBeNull();
      expect(upstreamSession.sessionUuid).toBeString();
      expect(await alive(tokens.access_token)).toBe(true);
      // A provider not configured for upstream logout keeps no ID token.
      const shown = await api("GET", `/0.1/backends/oidc/${provider.uuid}`, admin);
      expect(shown.json.upstream_logout).toBe(true);
    });

    test("the provider ends its session: its logout token ends the Tessera sessions of that sign-in", async () => {
      const { browser, tokens, sid } = await signIn("alice");
      const other = await signIn("carol");
      // The user signs out at the provider itself (its end_session_endpoint, confirmed).
      const out = await walk(browser, `${upstream.issuer}/session/end`);
      expect(out.res.status).toBeLessThan(400);
      await until(async () => !(await alive(tokens.access_token)), 15_000);
      expect(await browserSessionAlive(sid)).toBe(false);
      // Another user's session, of another upstream session, stays.
      expect(await alive(other.tokens.access_token)).toBe(true);
      expect(await browserSessionAlive(other.sid)).toBe(true);
    });

    test("a user with TOTP: the session made after the second step is bound too, and the provider's logout ends it", async () => {
      const t = get();
      await upstream.set({
        accounts: { erin: { preferred_username: "erin.up", email: "erin@corp.example", email_verified: true } },
      });
      const first = await signIn("erin");
      const userUuid = first.tokens.claims()!.sub;
      const [owner] = await t.app.db
        .select({ tenantUuid: users.tenantUuid })
        .from(users)
        .where(eq(users.uuid, userUuid));
      const tenantUuid = owner!.tenantUuid;
      const own = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid, tenantUuid })).token;
      const secret = (await t.request("POST", "/0.1/users/me/mfa/totp", { token: own })).json.secret as string;
      const confirmed = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
        token: own,
        body: { code: currentCode(secret, Date.now() - 30_000) },
      });
      expect(confirmed.status).toBeLessThan(300);
      // Again, in a new browser: the upstream, then the second step's page, then the code.
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(config, REDIRECT, { scope: "openid profile email" });
      const shown = await browser.get(flow.url);
      const href = /<a class="button secondary" href="([^"]+)">Continue with Corp SSO<\/a>/.exec(shown.html)![1]!;
      const step = await walk(browser, `${issuer.href}/${unescapeAmp(href)}`);
      expect(step.res.status).toBe(200);
      expect(step.html).toContain('name="pending"');
      const done = await browser.post("/0.1/oidc/authorize-mfa", {
        ...hiddenFieldsOf(step.html),
        code: currentCode(secret),
      });
      expect(done.res.status).toBe(303);
      const tokens = await oidc.authorizationCodeGrant(config, done.location!, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
      });
      expect(tokens.claims()!.amr).toEqual(["oidc", "otp", "mfa"]);
      const sid = tokens.claims()!.sid as string;
      const [bound] = await t.app.db
        .select()
        .from(upstreamOidcSessions)
        .where(eq(upstreamOidcSessions.browserSessionId, sid));
      expect(bound).toMatchObject({ providerUuid: provider.uuid, subject: "erin", completionHash: null });
      // The user signs out at the provider: its logout token ends this sign-in's Tessera sessions.
      const out = await walk(browser, `${upstream.issuer}/session/end`);
      expect(out.res.status).toBeLessThan(400);
      await until(async () => !(await alive(tokens.access_token)), 15_000);
      expect(await browserSessionAlive(sid)).toBe(false);
    });

    test("an existing account linked on the way (its password typed): its session is bound, the provider's logout ends it", async () => {
      const t = get();
      const gail = await createUserRow(t.app, { tenantUuid: tenant, username: "gail", password: "gail-pw" });
      await t.app.db
        .insert(emails)
        .values({ address: "gail@corp.example", confirmed: true, main: true, userUuid: gail });
      await upstream.set({
        account: "gail",
        tamper: null,
        accounts: { gail: { preferred_username: "gail.up", email: "gail@corp.example", email_verified: true } },
      });
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(config, REDIRECT, { scope: "openid profile email" });
      const shown = await browser.get(flow.url);
      const href = /<a class="button secondary" href="([^"]+)">Continue with Corp SSO<\/a>/.exec(shown.html)![1]!;
      const asked = await walk(browser, `${issuer.href}/${unescapeAmp(href)}`);
      expect(asked.res.status).toBe(200);
      expect(asked.html).toContain("Type its password to link it");
      const linked = await browser.post("/0.1/oidc/upstream-sign-in", {
        ...hiddenFieldsOf(asked.html),
        password: "gail-pw",
      });
      expect(linked.res.status).toBe(303);
      const tokens = await oidc.authorizationCodeGrant(config, linked.location!, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
      });
      expect(tokens.claims()!.sub).toBe(gail);
      const sid = tokens.claims()!.sid as string;
      const [bound] = await t.app.db
        .select()
        .from(upstreamOidcSessions)
        .where(eq(upstreamOidcSessions.browserSessionId, sid));
      expect(bound).toMatchObject({ providerUuid: provider.uuid, subject: "gail" });
      const out = await walk(browser, `${upstream.issuer}/session/end`);
      expect(out.res.status).toBeLessThan(400);
      await until(async () => !(await alive(tokens.access_token)), 15_000);
      expect(await browserSessionAlive(sid)).toBe(false);
    });

    test("logout at Tessera: its sessions end, then the provider's end_session_endpoint, then the relying party", async () => {
      const { browser, tokens, sid, upstreamSession } = await signIn("alice");
      const logout = new URL(`${issuer.href}/logout`);
      logout.searchParams.set("id_token_hint", tokens.id_token!);
      logout.searchParams.set("post_logout_redirect_uri", POST_LOGOUT);
      logout.searchParams.set("state", "rp-state");
      const first = await browser.get(logout.href);
      expect(first.res.status).toBe(303);
      const to = new URL(first.res.headers.get("location")!);
      expect(`${to.origin}${to.pathname}`).toBe(`${upstream.issuer}/session/end`);
      expect(to.searchParams.get("id_token_hint")).toBe(upstreamSession.idToken);
      expect(to.searchParams.get("client_id")).toBe(provider.client_id);
      expect(to.searchParams.get("post_logout_redirect_uri")).toBe(
        `${issuer.href}/upstream/${provider.uuid}/logged-out`,
      );
      const state = to.searchParams.get("state");
      expect(state?.length).toBeGreaterThan(30);
      // Tessera ended its own sessions before sending the browser on.
      expect(await alive(tokens.access_token)).toBe(false);
      expect(await browserSessionAlive(sid)).toBe(false);
      // The provider logs out, sends the browser back to Tessera, which sends it to the relying party.
      let back: URL | null = null;
      const end = await walk(browser, to.href, (u) => {
        if (u.pathname.endsWith("/logged-out")) back = u;
        return false;
      });
      expect(back).not.toBeNull();
      expect(end.location?.href).toBe(`${POST_LOGOUT}?state=rp-state`);
      // The state is used once: a replay shows the signed-out page, no redirect.
      const replay = await browser.get(back!.href);
      expect(replay.res.status).toBe(200);
      expect(replay.res.headers.get("location")).toBeNull();
    });

    test("logout confirmed on Tessera's page (no id_token_hint): the form may lead to the provider, and does", async () => {
      const { browser, tokens } = await signIn("alice");
      const asked = await browser.get(`${issuer.href}/logout`);
      expect(asked.res.status).toBe(200);
      // CSP form-action covers the redirects after the form (Chromium): the provider's endpoint is allowed.
      const csp = asked.res.headers.get("content-security-policy") ?? "";
      expect(csp).toMatch(new RegExp(`form-action [^;]*${upstream.origin.replace(/[.:/]/g, "\\$&")}`));
      const confirmed = await browser.post("/0.1/oidc/logout", hiddenFieldsOf(asked.html));
      expect(confirmed.res.status).toBe(303);
      expect(confirmed.res.headers.get("location")).toStartWith(`${upstream.issuer}/session/end?`);
      expect(await alive(tokens.access_token)).toBe(false);
    });

    test("a provider not configured for it: logout at Tessera goes straight back to the relying party", async () => {
      await api("PUT", `/0.1/backends/oidc/${provider.uuid}`, admin, {
        name: "corp",
        display_name: "Corp SSO",
        issuer: upstream.issuer,
        client_id: provider.client_id,
        provisioning: "create",
        upstream_logout: false,
      });
      try {
        const { browser, tokens, upstreamSession } = await signIn("alice");
        expect(upstreamSession.idToken).toBeNull();
        const logout = new URL(`${issuer.href}/logout`);
        logout.searchParams.set("id_token_hint", tokens.id_token!);
        logout.searchParams.set("post_logout_redirect_uri", POST_LOGOUT);
        const first = await browser.get(logout.href);
        expect(first.res.status).toBe(303);
        expect(first.res.headers.get("location")).toBe(POST_LOGOUT);
      } finally {
        const put = await api("PUT", `/0.1/backends/oidc/${provider.uuid}`, admin, {
          name: "corp",
          display_name: "Corp SSO",
          issuer: upstream.issuer,
          client_id: provider.client_id,
          provisioning: "create",
          upstream_logout: true,
        });
        expect(put.status).toBe(204);
      }
    });

    test("hostile logout tokens are refused with 400 and end nothing; the right one once", async () => {
      const { tokens, sid, upstreamSession } = await signIn("alice");
      const now = Math.floor(Date.now() / 1000);
      const claims = () => ({
        iss: upstream.issuer,
        aud: provider.client_id,
        iat: now,
        exp: now + 120,
        jti: randomUUID(),
        sub: upstreamSession.subject,
        sid: upstreamSession.sid,
        events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
      });
      const uri = `${issuer.href}/upstream/${provider.uuid}/backchannel-logout`;
      const post = (logoutToken: string, to = uri) =>
        fetch(to, {
          method: "POST",
          headers: { "Content-Type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ logout_token: logoutToken }),
        });
      const hostile: Array<[string, Promise<string>]> = [
        ["another key", upstream.logoutToken(claims(), true)],
        ["another audience", upstream.logoutToken({ ...claims(), aud: "another-client" })],
        ["another issuer", upstream.logoutToken({ ...claims(), iss: "https://evil.example.com" })],
        ["a nonce", upstream.logoutToken({ ...claims(), nonce: "n" })],
        ["no events", upstream.logoutToken({ ...claims(), events: undefined })],
        ["another event", upstream.logoutToken({ ...claims(), events: { "https://example.com/other": {} } })],
        ["a stale iat", upstream.logoutToken({ ...claims(), iat: now - 3600, exp: undefined })],
        ["expired", upstream.logoutToken({ ...claims(), iat: now - 100, exp: now - 90 })],
        ["neither sub nor sid", upstream.logoutToken({ ...claims(), sub: undefined, sid: undefined })],
        ["no jti", upstream.logoutToken({ ...claims(), jti: undefined })],
        ["not a JWT", Promise.resolve("not.a.jwt")],
      ];
      for (const [what, token] of hostile) {
        const res = await post(await token);
        expect({ what, status: res.status }).toEqual({ what, status: 400 });
        expect((await res.json()).error).toBe("invalid_request");
      }
      // No logout_token at all; an unknown provider.
      const none = await fetch(uri, { method: "POST", body: new URLSearchParams({}) });
      expect(none.status).toBe(400);
      const unknown = await post(
        await upstream.logoutToken(claims()),
        `${issuer.href}/upstream/${randomUUID()}/backchannel-logout`,
      );
      expect(unknown.status).toBe(400);
      expect(await alive(tokens.access_token)).toBe(true);
      expect(await browserSessionAlive(sid)).toBe(true);
      // Another provider of the same upstream (another client there): its URI refuses this provider's token
      // (audience), and its own token naming this sign-in's sid ends nothing of this provider's.
      const other = await addProvider(admin, { upstream_logout: false });
      const otherUri = `${issuer.href}/upstream/${other.uuid}/backchannel-logout`;
      expect((await post(await upstream.logoutToken(claims()), otherUri)).status).toBe(400);
      const foreign = await post(await upstream.logoutToken({ ...claims(), aud: other.client_id }), otherUri);
      expect(foreign.status).toBe(200);
      expect(await alive(tokens.access_token)).toBe(true);
      // The right one: 200, not cached, the sessions end; the same token again is a replay.
      const right = await upstream.logoutToken(claims());
      const ok = await post(right);
      expect(ok.status).toBe(200);
      expect(ok.headers.get("cache-control")).toBe("no-store");
      expect(await alive(tokens.access_token)).toBe(false);
      expect(await browserSessionAlive(sid)).toBe(false);
      const replay = await post(right);
      expect(replay.status).toBe(400);
      // Audited: the provider's logout, with how many browser sessions it ended.
      const audited = await get()
        .app.db.select()
        .from(auditEntries)
        .where(eq(auditEntries.action, "session.upstream_logout"));
      expect(audited.some((e) => e.targetUuid === provider.uuid)).toBe(true);
      await api("DELETE", `/0.1/backends/oidc/${other.uuid}`, admin);
    });
  },
  { config: { ...LOCAL, mfa: MFA_KEYS } },
);
