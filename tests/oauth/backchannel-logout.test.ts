// OpenID Connect Back-Channel Logout 1.0 against a receiver started here, as a relying party's back
// end would be: every way a session that gave a client tokens ends (RP-initiated logout, DELETE of a
// session or a token, a password change, a user disabled or deleted, a refresh token family revoked)
// sends the client a logout token, verified with `jose` against the provider's JWKS claim by claim
// (§2.4); a receiver that fails is retried and never delays the logout; clients of another tenant
// hear nothing.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import * as oidc from "openid-client";
import { outboundDeliveries } from "../../src/db/schema.ts";
import { BACKCHANNEL_LOGOUT_EVENT } from "../../src/services/oidc/backchannel.ts";
import { rotateSigningKeys, signingKey } from "../../src/services/oidc/keys.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { discoverClient, serveApp, startAuthorization, TestBrowser, type ServedApp } from "../helpers/oidc.ts";
import { until } from "../helpers/wait.ts";

const REDIRECT = "https://rp.example.com/callback";

function freePort(): number {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = s.port as number;
  s.stop(true);
  return port;
}

interface Received {
  path: string;
  contentType: string;
  token: string;
  at: number;
}

/** The relying parties' back ends: a path per client; each path answers 200 unless told otherwise. */
function receiver() {
  const received: Received[] = [];
  const attempts = new Map<string, number>();
  const behaviour = new Map<string, number | "hang">();
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const path = new URL(req.url).pathname;
      attempts.set(path, (attempts.get(path) ?? 0) + 1);
      const mode = behaviour.get(path) ?? 200;
      if (mode === "hang") return new Promise<Response>(() => {});
      const form = new URLSearchParams(await req.text());
      if (mode === 200)
        received.push({
          path,
          contentType: req.headers.get("content-type") ?? "",
          token: form.get("logout_token") ?? "",
          at: Date.now(),
        });
      // §2.8: 200 on success, 400 on a failure to log out.
      return new Response(null, { status: mode });
    },
  });
  return { server, received, attempts, behaviour, url: (path: string) => `http://127.0.0.1:${server.port}${path}` };
}

const PORT = freePort();
const rx = receiver();
afterAll(() => rx.server.stop(true));

describeEachDb(
  "OpenID Connect Back-Channel Logout",
  (get) => {
    let served: ServedApp;
    let issuer: string;
    let jwks: ReturnType<typeof createRemoteJWKSet>;
    let tenant: string;
    let admin: string;
    let grafana: Registered;
    let wiki: Registered;
    let quiet: Registered; // no back-channel URI
    let tenantB: string;
    let otherTenant: Registered;
    let n = 0;

    interface Registered {
      client_id: string;
      client_secret: string;
      path: string;
      config: oidc.Configuration;
    }

    async function register(token: string, name: string, extra: Record<string, unknown> = {}): Promise<Registered> {
      const t = get();
      const path = `/${t.kind}/${name}`;
      const r = await t.request("POST", "/0.1/oidc/clients", {
        token,
        body: {
          name,
          client_type: "confidential",
          redirect_uris: [REDIRECT],
          post_logout_redirect_uris: [`${REDIRECT}/out`],
          first_party: true,
          backchannel_logout_uri: rx.url(path),
          backchannel_logout_session_required: true,
          ...extra,
        },
      });
      if (r.status !== 201) throw new Error(r.text);
      return { ...r.json, path, config: await discoverClient(new URL(issuer), r.json) };
    }

    beforeAll(async () => {
      const t = get();
      served = serveApp(t, PORT);
      issuer = `${served.url}/0.1/oidc`;
      jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`));
      tenant = await createTenantRow(t.app);
      admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      grafana = await register(admin, "grafana");
      wiki = await register(admin, "wiki", { id_token_signed_response_alg: "RS256" });
      quiet = await register(admin, "quiet", { backchannel_logout_uri: null });
      tenantB = await createTenantRow(t.app);
      const adminB = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenantB })).token;
      otherTenant = await register(adminB, "other");
    });
    afterAll(() => served?.stop());

    /** A new user of the tenant, signed in to `clients` in one browser (single sign-on after the first). */
    async function signedIn(clients: Registered[], scope = "openid profile") {
      const t = get();
      const username = `user${++n}`;
      const userUuid = await createUserRow(t.app, { tenantUuid: tenant, username, password: "pw-secret" });
      const browser = new TestBrowser(served.url);
      const tokens: oidc.TokenEndpointResponse[] = [];
      for (const c of clients) {
        const flow = await startAuthorization(c.config, REDIRECT, { scope });
        const back = tokens.length
          ? (await browser.get(flow.url)).location!
          : (await browser.signIn(flow.url, username, "pw-secret")).location!;
        tokens.push(
          await oidc.authorizationCodeGrant(c.config, back, {
            pkceCodeVerifier: flow.verifier,
            expectedState: flow.state,
            expectedNonce: flow.nonce,
          }),
        );
      }
      return { userUuid, username, browser, tokens };
    }

    const sidOf = (idToken: string) =>
      JSON.parse(atob(idToken.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/"))).sid;

    /**
     * The logout tokens `c` received for `sub`, once there are `count`: each verified with jose against the
     * JWKS (signature, `typ`, `iss`, `aud`, `exp`/`iat`), and its claims checked against §2.4.
     */
    async function logoutTokens(c: Registered, sub: string, count = 1) {
      const verified = async () => {
        const out = [];
        for (const r of rx.received.filter((x) => x.path === c.path)) {
          const { payload, protectedHeader } = await jwtVerify(r.token, jwks, {
            issuer,
            audience: c.client_id,
            typ: "logout+jwt",
          });
          if (payload.sub === sub) out.push({ payload, protectedHeader, received: r });
        }
        return out;
      };
      await until(async () => (await verified()).length >= count, 10_000);
      const tokens = await verified();
      for (const { payload, protectedHeader, received } of tokens) {
        expect(received.contentType).toStartWith("application/x-www-form-urlencoded");
        expect(protectedHeader.typ).toBe("logout+jwt");
        expect(protectedHeader.kid).toBeString();
        expect(payload.iss).toBe(issuer);
        expect(payload.aud).toBe(c.client_id);
        expect(payload.iat).toBeNumber();
        expect(payload.exp! - payload.iat!).toBe(120);
        expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(30);
        expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/);
        expect(payload.events).toEqual({ [BACKCHANNEL_LOGOUT_EVENT]: {} });
        expect(payload.nonce).toBeUndefined(); // §2.4: never
        expect(Object.keys(payload).sort()).toEqual(
          ["aud", "events", "exp", "iat", "iss", "jti", "sub", ...(payload.sid ? ["sid"] : [])].sort(),
        );
      }
      return tokens.map((x) => x.payload);
    }

    const sessionOf = async (t: TestApp, accessToken: string) =>
      (await t.request("GET", `/0.1/token/${accessToken}`)).json.data.session_uuid as string;

    test("discovery advertises back- and front-channel logout, with sessions", async () => {
      const meta = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
      expect(meta.backchannel_logout_supported).toBe(true);
      expect(meta.backchannel_logout_session_supported).toBe(true);
      expect(meta.frontchannel_logout_supported).toBe(true);
      expect(meta.frontchannel_logout_session_supported).toBe(true);
    });

    test("RP-initiated logout: every client signed in through the browser session gets a logout token with sub and sid; the ES256 and RS256 clients each with their algorithm", async () => {
      const t = get();
      const { userUuid, browser, tokens } = await signedIn([grafana, wiki, quiet]);
      const sid = sidOf(tokens[0]!.id_token!);
      expect(sid).toBeString();
      const started = Date.now();
      const out = await browser.get(
        oidc
          .buildEndSessionUrl(grafana.config, {
            id_token_hint: tokens[0]!.id_token!,
            post_logout_redirect_uri: `${REDIRECT}/out`,
          })
          .toString(),
      );
      expect(out.res.status).toBe(303);
      const [g] = await logoutTokens(grafana, userUuid);
      const [w] = await logoutTokens(wiki, userUuid);
      expect(g!.sid).toBe(sid);
      expect(w!.sid).toBe(sid);
      expect(g!.jti).not.toBe(w!.jti);
      const gh = decodeProtectedHeader(rx.received.find((r) => r.path === grafana.path && r.at >= started)!.token);
      const wh = decodeProtectedHeader(rx.received.find((r) => r.path === wiki.path && r.at >= started)!.token);
      expect(gh.alg).toBe("ES256");
      expect(wh.alg).toBe("RS256");
      // The deliveries belong to the clients' tenant.
      const rows = await t.app.db
        .select()
        .from(outboundDeliveries)
        .where(eq(outboundDeliveries.ownerKey, `oidc_client:${grafana.client_id}`));
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((r) => r.tenantUuid === tenant)).toBe(true);
    });

    test("DELETE of a session: its client gets a logout token naming its sid", async () => {
      const t = get();
      const { userUuid, tokens } = await signedIn([grafana]);
      const session = await sessionOf(t, tokens[0]!.access_token);
      expect((await t.request("DELETE", `/0.1/sessions/${session}`, { token: admin, tenant })).status).toBe(204);
      const [p] = await logoutTokens(grafana, userUuid);
      expect(p!.sid).toBe(sidOf(tokens[0]!.id_token!));
    });

    test("DELETE of a session its refreshes continued: a logout token with the sign-in's sid, and its refresh token ends", async () => {
      const t = get();
      const { userUuid, tokens } = await signedIn([grafana], "openid offline_access");
      const session = await sessionOf(t, tokens[0]!.access_token);
      const refreshed = await oidc.refreshTokenGrant(grafana.config, tokens[0]!.refresh_token!);
      expect(await sessionOf(t, refreshed.access_token)).toBe(session);
      expect((await t.request("DELETE", `/0.1/sessions/${session}`, { token: admin, tenant })).status).toBe(204);
      const [p] = await logoutTokens(grafana, userUuid);
      expect(p!.sid).toBe(sidOf(tokens[0]!.id_token!));
      await expect(oidc.refreshTokenGrant(grafana.config, tokens[0]!.refresh_token!)).rejects.toMatchObject({
        error: "invalid_grant",
      });
    });

    test("DELETE of a token: its client gets a logout token", async () => {
      const t = get();
      const { userUuid, tokens } = await signedIn([wiki]);
      expect((await t.request("DELETE", `/0.1/token/${tokens[0]!.access_token}`)).status).toBe(200);
      const [p] = await logoutTokens(wiki, userUuid);
      expect(p!.sid).toBe(sidOf(tokens[0]!.id_token!));
    });

    test("a password change: each client the user's sessions reached is told", async () => {
      const t = get();
      const { userUuid, tokens } = await signedIn([grafana, wiki]);
      const own = (await tokenFor(t.app, { acl: ["auth.#"], userUuid, tenantUuid: tenant })).token;
      const r = await t.request("PUT", `/0.1/users/${userUuid}/password`, {
        token: own,
        body: { old_password: "pw-secret", new_password: "pw-secret-2" },
      });
      expect(r.status).toBe(204);
      const [g] = await logoutTokens(grafana, userUuid);
      await logoutTokens(wiki, userUuid);
      expect(g!.sid).toBe(sidOf(tokens[0]!.id_token!));
    });

    test("a user disabled, and a user deleted: their clients are told", async () => {
      const t = get();
      const disabled = await signedIn([grafana]);
      const r = await t.request("PUT", `/0.1/users/${disabled.userUuid}`, {
        token: admin,
        tenant,
        body: { username: disabled.username, enabled: false },
      });
      expect(r.status).toBe(204);
      await logoutTokens(grafana, disabled.userUuid);
      const deleted = await signedIn([wiki]);
      expect((await t.request("DELETE", `/0.1/users/${deleted.userUuid}`, { token: admin, tenant })).status).toBe(204);
      await logoutTokens(wiki, deleted.userUuid);
    });

    test("a refresh token family revoked: the client is told for the user (sub, no sid: every session of the user there)", async () => {
      const t = get();
      const { userUuid, tokens } = await signedIn([grafana], "openid offline_access");
      expect(tokens[0]!.refresh_token).toBeString();
      const r = await t.request("DELETE", `/0.1/users/${userUuid}/tokens/${grafana.client_id}`, {
        token: admin,
        tenant,
      });
      expect(r.status).toBe(204);
      const received = await until(async () =>
        (await logoutTokens(grafana, userUuid)).some((p) => p.sid === undefined),
      ).then(() => logoutTokens(grafana, userUuid));
      expect(received.some((p) => p.sid === undefined)).toBe(true);
    });

    test("revocation by the client (RFC 7009): an access token ends its session (sid), a refresh token its family (sub)", async () => {
      const access = await signedIn([wiki]);
      await oidc.tokenRevocation(wiki.config, access.tokens[0]!.access_token, { token_type_hint: "access_token" });
      const [a] = await logoutTokens(wiki, access.userUuid);
      expect(a!.sid).toBe(sidOf(access.tokens[0]!.id_token!));
      const offline = await signedIn([wiki], "openid offline_access");
      await oidc.tokenRevocation(wiki.config, offline.tokens[0]!.refresh_token!, { token_type_hint: "refresh_token" });
      await until(async () => (await logoutTokens(wiki, offline.userUuid)).some((p) => p.sid === undefined));
    });

    test("another user signing in in the same browser: the first user's clients are told (its browser session ended)", async () => {
      const t = get();
      const first = await signedIn([grafana]);
      const other = `switch${++n}`;
      await createUserRow(t.app, { tenantUuid: tenant, username: other, password: "pw-other" });
      const flow = await startAuthorization(wiki.config, REDIRECT, { prompt: "login" });
      expect((await first.browser.signIn(flow.url, other, "pw-other")).res.status).toBe(303);
      const [p] = await logoutTokens(grafana, first.userUuid);
      expect(p!.sid).toBe(sidOf(first.tokens[0]!.id_token!));
    });

    test("a receiver that fails is retried until it answers; the logout does not wait for it", async () => {
      const t = get();
      const slow = await register(admin, "slow");
      rx.behaviour.set(slow.path, "hang");
      const { userUuid, browser, tokens } = await signedIn([slow]);
      const started = performance.now();
      const out = await browser.get(
        oidc.buildEndSessionUrl(slow.config, { id_token_hint: tokens[0]!.id_token! }).toString(),
      );
      const took = performance.now() - started;
      expect(out.res.status).toBe(200); // the signed-out page
      // The receiver never answers: waiting for it would take the outbound timeout (1.5 s) at least.
      expect(took).toBeLessThan(1_500);
      expect(await t.request("HEAD", `/0.1/token/${tokens[0]!.access_token}`).then((r) => r.status)).toBe(404);
      await until(() => (rx.attempts.get(slow.path) ?? 0) >= 1, 10_000);
      rx.behaviour.set(slow.path, 503); // down: refused
      await until(() => (rx.attempts.get(slow.path) ?? 0) >= 2, 10_000);
      rx.behaviour.delete(slow.path); // back
      const [p] = await logoutTokens(slow, userUuid);
      expect(rx.attempts.get(slow.path)!).toBeGreaterThanOrEqual(3);
      expect(p!.sid).toBe(sidOf(tokens[0]!.id_token!));
    });

    test("tenant isolation: another tenant's client hears nothing of this tenant's logouts, and its administrator neither sees nor changes this tenant's logout URIs", async () => {
      const t = get();
      const before = rx.received.filter((r) => r.path === otherTenant.path).length;
      const { userUuid, browser, tokens } = await signedIn([grafana]);
      await browser.get(oidc.buildEndSessionUrl(grafana.config, { id_token_hint: tokens[0]!.id_token! }).toString());
      await logoutTokens(grafana, userUuid);
      expect(rx.received.filter((r) => r.path === otherTenant.path).length).toBe(before);
      const adminB = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenantB })).token;
      const read = await t.request("GET", `/0.1/oidc/clients/${grafana.client_id}`, { token: adminB, tenant: tenantB });
      expect(read.status).toBe(404);
      expect(read.text).not.toContain(rx.url(""));
      const put = await t.request("PUT", `/0.1/oidc/clients/${grafana.client_id}`, {
        token: adminB,
        tenant: tenantB,
        body: { name: "x", redirect_uris: [REDIRECT], backchannel_logout_uri: rx.url("/stolen") },
      });
      expect(put.status).toBe(404);
      const still = await t.request("GET", `/0.1/oidc/clients/${grafana.client_id}`, { token: admin, tenant });
      expect(still.json.backchannel_logout_uri).toBe(rx.url(grafana.path));
    });

    test("a client without a back-channel URI, or deleted before the delivery, is not called", async () => {
      const t = get();
      const gone = await register(admin, "gone");
      const { userUuid, tokens } = await signedIn([quiet, gone]);
      // Deleting the client ends its sessions (a notice is recorded), and the client with them.
      expect((await t.request("DELETE", `/0.1/oidc/clients/${gone.client_id}`, { token: admin, tenant })).status).toBe(
        204,
      );
      expect(await t.request("HEAD", `/0.1/token/${tokens[1]!.access_token}`).then((r) => r.status)).toBe(404);
      await until(async () => {
        const rows = await t.app.db
          .select()
          .from(outboundDeliveries)
          .where(eq(outboundDeliveries.ownerKey, `oidc_client:${gone.client_id}`));
        return rows.length > 0 && rows.every((r) => r.status === "dropped");
      }, 10_000);
      expect(rx.attempts.get(gone.path)).toBeUndefined();
      expect(
        await t.app.db
          .select()
          .from(outboundDeliveries)
          .where(eq(outboundDeliveries.ownerKey, `oidc_client:${quiet.client_id}`)),
      ).toEqual([]);
      expect(userUuid).toBeString();
    });

    test("a key rotation between the logout and the delivery: the token is signed with the key current at the attempt, published in the JWKS", async () => {
      const t = get();
      const later = await register(admin, "later");
      rx.behaviour.set(later.path, 503);
      const { userUuid, browser, tokens } = await signedIn([later]);
      const oldKid = decodeProtectedHeader(tokens[0]!.id_token!).kid;
      await browser.get(oidc.buildEndSessionUrl(later.config, { id_token_hint: tokens[0]!.id_token! }).toString());
      await until(() => (rx.attempts.get(later.path) ?? 0) >= 1, 10_000);
      await rotateSigningKeys(t.app);
      expect((await signingKey(t.app, "ES256")).kid).not.toBe(oldKid);
      jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`)); // a relying party refetches on an unknown kid
      rx.behaviour.delete(later.path);
      await logoutTokens(later, userUuid);
      const received = rx.received.find((r) => r.path === later.path)!;
      const header = decodeProtectedHeader(received.token);
      expect(header.kid).toBe((await signingKey(t.app, "ES256")).kid);
      expect(header.kid).not.toBe(oldKid);
    });
  },
  {
    config: {
      public_url: `http://127.0.0.1:${PORT}`,
      outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true, timeout_ms: 1500 },
      outbound_delivery: { retry_initial_seconds: 0.05, retry_max_interval_seconds: 0.2, poll_seconds: 0.2 },
    },
  },
);
