// What a refresh may still give, and what a replay or a lost answer does to a grant:
//   - a replayed authorization code ends the refresh family its first exchange gave a token of
//     (RFC 6749 §4.1.2, §10.5);
//   - refresh tokens and browser sessions made before a tenant required MFA give a user without a
//     factor the enrol-only ACL, as a password login does (POST /0.1/token's refresh token, the
//     OIDC refresh grant, single sign-on);
//   - a public client retrying the refresh whose answer it lost gets the successor already made,
//     within the grace period only, from the same client only, and only while the successor is
//     unused (RFC 9700 §4.14.2); a rotation whose request the deadline already answered rolls back.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { Hono } from "hono";
import * as oidc from "openid-client";
import type { AppContext } from "../src/boot/context.ts";
import { oidcRefreshTokens, refreshTokens } from "../src/db/schema.ts";
import { answerAbandoned, requestDeadline } from "../src/http/deadline.ts";
import { ApiError } from "../src/domain/errors.ts";
import { MFA_ENROL_ONLY_ACL } from "../src/services/auth/mfa-policy.ts";
import { clientForAuthentication } from "../src/services/oidc/clients.ts";
import { hashToken } from "../src/services/oidc/grants.ts";
import { refreshGrant } from "../src/services/oidc/grants/refresh-token.ts";
import { describeEachDb, type TestApp } from "./helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "./helpers/fixtures.ts";
import { insecure, serveApp, type ServedApp, TestBrowser } from "./helpers/oidc.ts";

const APP_REDIRECT = "com.example.phone:/cb";
const SCOPE = "openid offline_access";

/** A policy of its own for `user`, so that its ACL differs from the enrol-only one before the requirement. */
async function givePolicy(t: TestApp, root: string, tenant: string, user: string): Promise<void> {
  const policy = await t.request("POST", "/0.1/policies", {
    token: root,
    tenant,
    body: { name: `p-${crypto.randomUUID().slice(0, 8)}`, acl: ["confd.users.me.read"] },
  });
  expect(policy.status).toBe(200);
  const attached = await t.request("PUT", `/0.1/users/${user}/policies/${policy.json.uuid}`, { token: root, tenant });
  expect(attached.status).toBe(204);
}

describeEachDb("OIDC refresh safety", (get) => {
  let served: ServedApp;
  let issuer: URL;
  let tenant: string;
  let admin: string;
  let phone: string;
  let otherPhone: string;

  const registerPhone = async (name: string): Promise<string> => {
    const r = await get().request("POST", "/0.1/oidc/clients", {
      token: admin,
      body: {
        name,
        client_type: "public",
        first_party: true,
        redirect_uris: [APP_REDIRECT],
        grant_types: ["authorization_code", "refresh_token"],
        scopes: ["openid", "profile", "offline_access"],
      },
    });
    if (r.status !== 201) throw new Error(r.text);
    return r.json.client_id;
  };
  const tokenEndpoint = async (form: Record<string, string>) => {
    const r = await fetch(`${issuer.href}/token`, {
      method: "POST",
      body: new URLSearchParams(form),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    return { status: r.status, json: (await r.json()) as Record<string, string> };
  };
  const refresh = (clientId: string, refreshToken: string) =>
    tokenEndpoint({ grant_type: "refresh_token", client_id: clientId, refresh_token: refreshToken });
  const alive = async (accessToken: string) => (await get().request("HEAD", `/0.1/token/${accessToken}`)).status;
  const aclOf = async (accessToken: string) =>
    (await get().request("GET", `/0.1/token/${accessToken}`)).json.data.acl as string[];
  const familyOf = async (clientId: string, userUuid: string) =>
    (await get().app.db.select().from(refreshTokens).where(eq(refreshTokens.clientId, clientId))).filter(
      (r) => r.userUuid === userUuid,
    );

  /** The code flow in `browser` (signing in when it has no session yet): the code and the verifier. */
  async function authorize(clientId: string, browser: TestBrowser, username: string, password: string) {
    const config = await oidc.discovery(issuer, clientId, undefined, oidc.None(), insecure);
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: APP_REDIRECT,
      scope: SCOPE,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state: oidc.randomState(),
    });
    const shown = await browser.get(url.toString());
    const answer = shown.html.includes('name="password"')
      ? await browser.signIn(url.toString(), username, password)
      : shown;
    const code = answer.location?.searchParams.get("code");
    if (!code) throw new Error(`no code: ${answer.res.status} ${answer.html.slice(0, 200)}`);
    return { code, verifier };
  }
  const exchange = (clientId: string, a: { code: string; verifier: string }) =>
    tokenEndpoint({
      grant_type: "authorization_code",
      client_id: clientId,
      code: a.code,
      code_verifier: a.verifier,
      redirect_uri: APP_REDIRECT,
    });
  /** A new user of the tenant, signed in to `clientId`: its tokens, and its browser (the SSO cookie). */
  async function signedIn(clientId = phone) {
    const username = `u${crypto.randomUUID().slice(0, 8)}`;
    const uuid = await createUserRow(get().app, { tenantUuid: tenant, username, password: "pw-secret" });
    const browser = new TestBrowser(served.url);
    const first = await exchange(clientId, await authorize(clientId, browser, username, "pw-secret"));
    expect(first.status).toBe(200);
    return { uuid, username, browser, tokens: first.json };
  }

  beforeAll(async () => {
    const t = get();
    served = serveApp(t);
    issuer = new URL(`${served.url}/0.1/oidc`);
    tenant = await createTenantRow(t.app);
    admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    phone = await registerPhone("Phone");
    otherPhone = await registerPhone("Other phone");
  });
  afterAll(() => served?.stop());

  test("a replayed authorization code also ends the refresh token its first exchange gave (RFC 6749 §4.1.2)", async () => {
    const username = `u${crypto.randomUUID().slice(0, 8)}`;
    const uuid = await createUserRow(get().app, { tenantUuid: tenant, username, password: "pw-secret" });
    const grant = await authorize(phone, new TestBrowser(served.url), username, "pw-secret");
    const first = await exchange(phone, grant);
    expect(first.status).toBe(200);
    expect(first.json.refresh_token).toBeString();
    const replay = await exchange(phone, grant);
    expect(replay).toMatchObject({ status: 400, json: { error: "invalid_grant" } });
    expect(await alive(first.json.access_token!)).toBe(404);
    // The refresh token of the first exchange no longer refreshes: its family is gone.
    expect(await refresh(phone, first.json.refresh_token!)).toMatchObject({
      status: 400,
      json: { error: "invalid_grant" },
    });
    expect(await familyOf(phone, uuid)).toEqual([]);
  });

  test("a retry of the refresh whose answer was lost gets the same successor; the grant lives on (RFC 9700 §4.14.2)", async () => {
    const { uuid, tokens } = await signedIn();
    const lost = await refresh(phone, tokens.refresh_token!); // committed, but the client never saw it
    expect(lost.status).toBe(200);
    const retry = await refresh(phone, tokens.refresh_token!);
    expect(retry.status).toBe(200);
    // The same answer again: the same successor and access token, no new session.
    expect(retry.json.refresh_token).toBe(lost.json.refresh_token!);
    expect(retry.json.access_token).toBe(lost.json.access_token!);
    expect(retry.json.id_token).toBeString();
    expect(await alive(retry.json.access_token!)).toBe(204);
    expect(await familyOf(phone, uuid)).toHaveLength(1);
    // That access token ended meanwhile (a logout): the retry gets a new one, for the same successor.
    expect((await get().request("DELETE", `/0.1/token/${lost.json.access_token}`)).status).toBe(200);
    const again = await refresh(phone, tokens.refresh_token!);
    expect(again.status).toBe(200);
    expect(again.json.refresh_token).toBe(lost.json.refresh_token!);
    expect(again.json.access_token).not.toBe(lost.json.access_token!);
    expect(await alive(again.json.access_token!)).toBe(204);
    const next = await refresh(phone, retry.json.refresh_token!);
    expect(next.status).toBe(200);
    expect(next.json.refresh_token).not.toBe(retry.json.refresh_token!);
    expect(await alive(next.json.access_token!)).toBe(204);
  });

  test("two refreshes at once with one token (a client's double request): both get the one successor", async () => {
    const { uuid, tokens } = await signedIn();
    const [a, b] = await Promise.all([refresh(phone, tokens.refresh_token!), refresh(phone, tokens.refresh_token!)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect([a.json.refresh_token, a.json.access_token]).toEqual([b.json.refresh_token!, b.json.access_token!]);
    expect(await familyOf(phone, uuid)).toHaveLength(1);
    expect((await refresh(phone, a.json.refresh_token!)).status).toBe(200);
  });

  test("after the grace period, a rotated token presented again revokes the family", async () => {
    const t = get();
    const { uuid, tokens } = await signedIn();
    const rotated = await refresh(phone, tokens.refresh_token!);
    expect(rotated.status).toBe(200);
    // The rotation, as it would look once the grace period (10 s by default) has passed.
    const past = new Date(Date.now() - (t.app.config.oidc.refresh_token_reuse_grace + 1) * 1000);
    await t.app.db
      .update(oidcRefreshTokens)
      .set({ rotatedAt: past })
      .where(eq(oidcRefreshTokens.tokenHash, hashToken(tokens.refresh_token!)));
    expect(await refresh(phone, tokens.refresh_token!)).toMatchObject({
      status: 400,
      json: { error: "invalid_grant" },
    });
    expect(await alive(rotated.json.access_token!)).toBe(404);
    expect((await refresh(phone, rotated.json.refresh_token!)).status).toBe(400);
    expect(await familyOf(phone, uuid)).toEqual([]);
  });

  test("once the successor was used, the predecessor presented again revokes the family, even within the grace period", async () => {
    const { uuid, tokens } = await signedIn();
    const r1 = await refresh(phone, tokens.refresh_token!);
    const r2 = await refresh(phone, r1.json.refresh_token!);
    expect([r1.status, r2.status]).toEqual([200, 200]);
    expect(await refresh(phone, tokens.refresh_token!)).toMatchObject({
      status: 400,
      json: { error: "invalid_grant" },
    });
    for (const access of [tokens.access_token!, r1.json.access_token!, r2.json.access_token!])
      expect(await alive(access)).toBe(404);
    expect((await refresh(phone, r2.json.refresh_token!)).status).toBe(400);
    expect(await familyOf(phone, uuid)).toEqual([]);
  });

  test("another client presenting the rotated token is refused and gets nothing; the grace is its own client's", async () => {
    const { uuid, tokens } = await signedIn();
    const lost = await refresh(phone, tokens.refresh_token!);
    expect(lost.status).toBe(200);
    expect(await refresh(otherPhone, tokens.refresh_token!)).toMatchObject({
      status: 400,
      json: { error: "invalid_grant" },
    });
    expect(await familyOf(otherPhone, uuid)).toEqual([]);
    const retry = await refresh(phone, tokens.refresh_token!);
    expect(retry.status).toBe(200);
    expect(retry.json.refresh_token).toBe(lost.json.refresh_token!);
  });

  test("a grace period of 0: the first retry is reuse", async () => {
    const t = get();
    const { uuid, tokens } = await signedIn();
    const before = t.app.config.oidc.refresh_token_reuse_grace;
    t.app.config.oidc.refresh_token_reuse_grace = 0;
    try {
      const rotated = await refresh(phone, tokens.refresh_token!);
      expect(rotated.status).toBe(200);
      expect((await refresh(phone, tokens.refresh_token!)).status).toBe(400);
      expect(await familyOf(phone, uuid)).toEqual([]);
    } finally {
      t.app.config.oidc.refresh_token_reuse_grace = before;
    }
  });

  test("a rotation whose request the deadline already answered rolls back: the token still refreshes, its session ends", async () => {
    const t = get();
    const { uuid, tokens } = await signedIn();
    const client = (await clientForAuthentication(t.app, phone))!;
    const origin = { userAgent: "tests", remoteAddr: "127.0.0.1", forwarded: false };
    const form = { grant_type: "refresh_token", refresh_token: tokens.refresh_token! };
    const sessionsBefore = (await t.request("GET", `/0.1/users/${uuid}/sessions`, { token: admin })).json.total;
    const refused = await refreshGrant(t.app, client, form, issuer.href, origin, () => true).catch((e) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(503);
    const [row] = await t.app.db
      .select()
      .from(oidcRefreshTokens)
      .where(eq(oidcRefreshTokens.tokenHash, hashToken(tokens.refresh_token!)));
    expect(row!.rotatedAt).toBeNull();
    expect((await t.request("GET", `/0.1/users/${uuid}/sessions`, { token: admin })).json.total).toBe(sessionsBefore);
    // The client retries with the token it holds: an ordinary rotation, no reuse.
    const retry = await refresh(phone, tokens.refresh_token!);
    expect(retry.status).toBe(200);
    expect(await alive(retry.json.access_token!)).toBe(204);
    expect(await alive(tokens.access_token!)).toBe(204);
  });

  test("the deadline marks the request it answered, for a write still running to see before committing", async () => {
    const onClose: Array<() => void> = [];
    const app = { config: { db_timeout: 0.05 }, onClose } as unknown as AppContext;
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const seen: boolean[] = [];
    const hono = new Hono();
    hono.use("*", requestDeadline(app).middleware());
    hono.get("/slow", async (c) => {
      seen.push(answerAbandoned(c.req.raw));
      await released;
      seen.push(answerAbandoned(c.req.raw));
      return c.text("late");
    });
    hono.get("/fast", (c) => c.text(String(answerAbandoned(c.req.raw))));
    hono.onError((_e, c) => c.text("deadline", 503));
    try {
      const slow = await hono.request("/slow");
      expect(slow.status).toBe(503);
      release();
      await released;
      // The handler resumes after the answer: give it its turn, then read what it saw.
      while (seen.length < 2) await Bun.sleep(0);
      expect(seen).toEqual([false, true]);
      expect(await (await hono.request("/fast")).text()).toBe("false");
    } finally {
      for (const close of onClose) close();
    }
  });

  test("MFA required since: a wazo refresh token gives a user without a factor the enrol-only ACL", async () => {
    const t = get();
    const strict = await createTenantRow(t.app);
    const root = (await tokenFor(t.app, { acl: ["#"] })).token;
    await givePolicy(
      t,
      root,
      strict,
      await createUserRow(t.app, { tenantUuid: strict, username: "walter", password: "pw" }),
    );
    const basic = `Basic ${Buffer.from("walter:pw").toString("base64")}`;
    const offline = await t.request("POST", "/0.1/token", {
      headers: { Authorization: basic },
      body: { access_type: "offline", client_id: "softphone" },
    });
    expect(offline.status).toBe(200);
    expect(offline.json.data.acl).not.toEqual(MFA_ENROL_ONLY_ACL);
    const put = await t.request("PUT", `/0.1/tenants/${strict}/mfa`, { token: root, body: { mfa: "required" } });
    expect(put.status).toBe(204);
    const refreshed = await t.request("POST", "/0.1/token", {
      body: { refresh_token: offline.json.data.refresh_token, client_id: "softphone" },
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.json.data.acl).toEqual(MFA_ENROL_ONLY_ACL);
  });

  test("MFA required since: the OIDC refresh grant and single sign-on give a user without a factor the enrol-only ACL", async () => {
    const t = get();
    const strict = await createTenantRow(t.app, { parentUuid: tenant });
    const root = (await tokenFor(t.app, { acl: ["#"] })).token;
    const username = `u${crypto.randomUUID().slice(0, 8)}`;
    await givePolicy(
      t,
      root,
      strict,
      await createUserRow(t.app, { tenantUuid: strict, username, password: "pw-secret" }),
    );
    const browser = new TestBrowser(served.url);
    const first = await exchange(phone, await authorize(phone, browser, username, "pw-secret"));
    expect(first.status).toBe(200);
    expect(await aclOf(first.json.access_token!)).not.toEqual(MFA_ENROL_ONLY_ACL);
    const put = await t.request("PUT", `/0.1/tenants/${strict}/mfa`, { token: root, body: { mfa: "required" } });
    expect(put.status).toBe(204);
    const refreshed = await refresh(phone, first.json.refresh_token!);
    expect(refreshed.status).toBe(200);
    expect(await aclOf(refreshed.json.access_token!)).toEqual(MFA_ENROL_ONLY_ACL);
    // The browser session made before the requirement: signed in without a page, restricted too.
    const sso = await exchange(phone, await authorize(phone, browser, username, "never asked"));
    expect(sso.status).toBe(200);
    expect(await aclOf(sso.json.access_token!)).toEqual(MFA_ENROL_ONLY_ACL);
  });
});
