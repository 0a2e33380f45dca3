// What the session cap (`max_user_concurrent_sessions`) does, said by every door: the REST login is
// refused (429 too-many-sessions, wazo-auth's answer), an OIDC refresh and the sign-in page name
// the cap (not "too many attempts"); with `session_cap_policy: end_oldest` (Keycloak's choice) the
// oldest sessions end instead — exactly enough under concurrent logins, and on PostgreSQL with two
// instances the other instance refuses an ended session's token once told.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import * as oidc from "openid-client";
import { oidcRefreshTokens } from "../../src/db/schema.ts";
import { openDatabase } from "../../src/db/index.ts";
import { createTestApp, describeEachDb, type TestApp } from "../helpers/app.ts";
import { adminToken, createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import {
  browserSignIn,
  discoverClient,
  openLoginPage,
  serveApp,
  startAuthorization,
  submitLogin,
} from "../helpers/oidc.ts";
import { scratchDatabase } from "../helpers/scratch-db.ts";
import { basicAuth } from "../helpers/service-process.ts";

const REDIRECT = "https://rp.example.com/cb";

async function sessionsOf(t: TestApp, user: string): Promise<number> {
  const rows = await t.app.db.execute(
    `select count(distinct session_uuid)::int as n from auth_token where auth_id = '${user}'` as never,
  );
  return Number((Array.isArray(rows) ? rows : (rows as { rows: { n: number }[] }).rows)[0]!.n);
}

async function cappedUser(t: TestApp, existing: number) {
  const tenant = await createTenantRow(t.app);
  const name = `cap${crypto.randomUUID().slice(0, 8)}`;
  const user = await createUserRow(t.app, { tenantUuid: tenant, username: name, password: "pw" });
  const tokens: string[] = [];
  for (let i = 0; i < existing; i++) {
    const { token } = await tokenFor(t.app, { acl: [], tenantUuid: tenant, userUuid: user });
    // Issued a minute apart, oldest first (issue times are whole seconds).
    await t.app.db.execute(
      `update auth_token set issued_t = issued_t - ${60 * (existing - i)} where uuid = '${token}'` as never,
    );
    tokens.push(token);
  }
  return { tenant, name, user, tokens };
}

const login = (t: TestApp, name: string) =>
  t.request("POST", "/0.1/token", { body: {}, headers: basicAuth(name, "pw") });

describeEachDb(
  "the session cap refuses (the default)",
  (get) => {
    test("the REST login: 429 too-many-sessions; the sign-in page names the cap", async () => {
      const t = get();
      const { name } = await cappedUser(get(), 2);
      const refused = await login(t, name);
      expect([refused.status, refused.json.error_id]).toEqual([429, "too-many-sessions"]);
      expect(refused.json.message).toContain("maximum number of active sessions");

      const admin = await adminToken(t.app);
      const client = (
        await t.request("POST", "/0.1/oidc/clients", {
          token: admin,
          body: { name: "rp", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true },
        })
      ).json;
      const served = serveApp(t);
      try {
        const config = await discoverClient(new URL(`${served.url}/0.1/oidc`), client);
        const page = await openLoginPage((await startAuthorization(config, REDIRECT)).url);
        const submitted = await submitLogin(served.url, page, name, "pw");
        expect(submitted.status).toBe(429);
        const html = await submitted.text();
        expect(html).toContain("signed in on too many devices");
        expect(html).not.toContain("Too many attempts");
      } finally {
        await served.stop();
      }
    });

    test("an OIDC refresh at the cap continues its session; one that must open a session: 429 access_denied naming the session cap", async () => {
      const t = get();
      const admin = await adminToken(t.app);
      const { name, user, tenant } = await cappedUser(t, 1);
      const client = (
        await t.request("POST", "/0.1/oidc/clients", {
          token: admin,
          tenant,
          body: {
            name: "rp",
            client_type: "confidential",
            redirect_uris: [REDIRECT],
            first_party: true,
            grant_types: ["authorization_code", "refresh_token"],
          },
        })
      ).json;
      const served = serveApp(t);
      try {
        const config = await discoverClient(new URL(`${served.url}/0.1/oidc`), client);
        const started = await startAuthorization(config, REDIRECT, { scope: "openid offline_access" });
        const back = await browserSignIn(served.url, started.url, name, "pw");
        const tokens = await oidc.authorizationCodeGrant(config, back, {
          pkceCodeVerifier: started.verifier,
          expectedState: started.state,
          expectedNonce: started.nonce,
        });
        expect(await sessionsOf(t, user)).toBe(2); // the cap in this suite
        const refresh = () =>
          fetch(`${served.url}/0.1/oidc/token`, {
            method: "POST",
            headers: {
              Authorization: `Basic ${btoa(`${client.client_id}:${client.client_secret}`)}`,
              "Content-Type": "application/x-www-form-urlencoded",
            },
            body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: tokens.refresh_token! }),
          });
        // A refresh continues the sign-in's session: nothing more counted.
        expect((await refresh()).status).toBe(200);
        expect(await sessionsOf(t, user)).toBe(2);
        // A refresh token issued before its session was linked (migration 0042) opens one: a third.
        await t.app.db.update(oidcRefreshTokens).set({ sessionUuid: null }).where(eq(oidcRefreshTokens.userUuid, user));
        const refreshed = await refresh();
        expect(refreshed.status).toBe(429);
        const body = await refreshed.json();
        expect(body.error).toBe("access_denied");
        expect(body.error_description).toContain("session cap");
      } finally {
        await served.stop();
      }
    });
  },
  { config: { max_user_concurrent_sessions: 2 } },
);

describeEachDb(
  "session_cap_policy: end_oldest",
  (get) => {
    test("a login past the cap ends the oldest session and succeeds", async () => {
      const t = get();
      const { name, user, tokens } = await cappedUser(t, 3);
      const answers = [];
      for (let i = 0; i < 2; i++) answers.push((await login(t, name)).status);
      expect(answers).toEqual([200, 200]);
      expect(await sessionsOf(t, user)).toBe(3);
      const checks = [];
      for (const token of tokens) checks.push((await t.request("HEAD", `/0.1/token/${token}`)).status);
      expect(checks).toEqual([404, 404, 204]); // the two oldest ended, the youngest kept
    });

    test("30 concurrent logins past the cap: all succeed, exactly the cap remains", async () => {
      const t = get();
      const { name, user } = await cappedUser(t, 2);
      const answers = await Promise.all(Array.from({ length: 30 }, () => login(t, name).then((r) => r.status)));
      expect(answers.filter((s) => s !== 200)).toEqual([]);
      expect(await sessionsOf(t, user)).toBe(3);
    }, 60_000);
  },
  {
    config: {
      max_user_concurrent_sessions: 3,
      session_cap_policy: "end_oldest",
      password_hash_queue: 1000,
      db_timeout: 60,
    },
  },
);

describe.skipIf(!process.env.TEST_DATABASE_URL)("session_cap_policy: end_oldest [postgres, two instances]", () => {
  let scratch: Awaited<ReturnType<typeof scratchDatabase>>;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    scratch = await scratchDatabase("tessera_cap_oldest");
    const open = () => openDatabase({ url: scratch.url, poolSize: 10 });
    const config = {
      max_user_concurrent_sessions: 3,
      session_cap_policy: "end_oldest",
      db_pool_size: 10,
      password_hash_queue: 1000,
      db_timeout: 60,
    };
    a = await createTestApp("postgres", { database: open, config });
    b = await createTestApp("postgres", { database: open, config });
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await scratch?.drop();
  }, 30_000);

  test("logins split over both instances leave the cap; B refuses the ended session's cached token", async () => {
    const { name, user, tokens } = await cappedUser(a, 3);
    expect((await b.request("HEAD", `/0.1/token/${tokens[0]}`)).status).toBe(204); // cached on B
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => login(i % 2 ? b : a, name).then((r) => r.status)),
    );
    expect(answers.filter((s) => s !== 200)).toEqual([]);
    expect(await sessionsOf(a, user)).toBe(3);
    const end = Date.now() + 5000;
    while ((await b.request("HEAD", `/0.1/token/${tokens[0]}`)).status !== 404 && Date.now() < end) await Bun.sleep(10);
    expect((await b.request("HEAD", `/0.1/token/${tokens[0]}`)).status).toBe(404);
  }, 60_000);
});
