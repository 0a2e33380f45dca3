// A database outage during the token endpoint's grants and the device verification page (private
// PostgreSQL cluster, stopped by the test): 503 `temporarily_unavailable` JSON on the endpoints, an
// error page on the verification page, and never a half-issued token — once the database is back,
// the refresh token still works, the device request is still pending, and no session was left over.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import * as oidc from "openid-client";
import { oidcDeviceCodes, tokens as tokenTable } from "../../src/db/schema.ts";
import type { TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import {
  browserSignIn,
  openLoginPage,
  serveApp,
  type ServedApp,
  startClusterApp,
  stopClusterApp,
} from "../helpers/oidc.ts";
import { pgClusterAvailable, type PgCluster } from "../helpers/pg-cluster.ts";

const REDIRECT = "https://rp.example.com/cb";
const DEVICE = "urn:ietf:params:oauth:grant-type:device_code";

describe.skipIf(!pgClusterAvailable)("OpenID Connect grants during a database outage", () => {
  let cluster: PgCluster;
  let t: TestApp;
  let served: ServedApp;

  beforeAll(async () => {
    ({ cluster, t, served } = await startClusterApp());
  }, 120_000);
  afterAll(() => stopClusterApp({ cluster, t, served }), 60_000);

  test("refresh, client credentials, device authorization and its page: 503, nothing issued, nothing spent", async () => {
    const tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#", "calld.#"], tenantUuid: tenant })).token;
    const user = await createUserRow(t.app, { tenantUuid: tenant, username: "dora", password: "dora-secret" });
    const register = async (body: Record<string, unknown>) =>
      (
        await t.request("POST", "/0.1/oidc/clients", {
          token: admin,
          body: { name: "rp", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true, ...body },
        })
      ).json as { client_id: string; client_secret: string };
    const web = await register({});
    const daemon = await register({ redirect_uris: [], grant_types: ["client_credentials"], acl: ["calld.#"] });
    const tv = await register({ redirect_uris: [], grant_types: [DEVICE] });
    const issuer = new URL(`${served.url}/0.1/oidc`);
    const configOf = (c: { client_id: string; client_secret: string }) =>
      oidc.discovery(issuer, c.client_id, undefined, oidc.ClientSecretBasic(c.client_secret), {
        execute: [oidc.allowInsecureRequests],
      });
    const config = await configOf(web);
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: "openid offline_access",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    });
    const back = await browserSignIn(served.url, url.toString(), "dora", "dora-secret");
    const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier });
    const device = await oidc.initiateDeviceAuthorization(await configOf(tv), {});
    const sessionsOfDora = async () =>
      (await t.app.db.select({ n: sql<number>`count(*)::int` }).from(tokenTable).where(eq(tokenTable.authId, user)))[0]!
        .n;
    const before = await sessionsOfDora();

    await cluster.stop();
    const post = (path: string, client: { client_id: string; client_secret: string }, form: Record<string, string>) =>
      fetch(`${issuer.href}/${path}`, {
        method: "POST",
        body: new URLSearchParams({ client_id: client.client_id, client_secret: client.client_secret, ...form }),
      });
    const answers = [
      await post("token", web, { grant_type: "refresh_token", refresh_token: tokens.refresh_token! }),
      await post("token", daemon, { grant_type: "client_credentials" }),
      await post("device_authorization", tv, {}),
      await post("token", tv, { grant_type: DEVICE, device_code: device.device_code }),
    ];
    for (const r of answers) {
      expect(r.status).toBe(503);
      expect(r.headers.get("content-type")).toContain("application/json");
      expect(await r.json()).toMatchObject({ error: "temporarily_unavailable" });
    }
    const page = await openLoginPage(device.verification_uri_complete!);
    expect(page.status).toBe(503);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.html).toContain("not possible right now");

    await cluster.start();
    // Nothing was issued meanwhile, nothing spent: the refresh token works, the device request waits.
    let after = -1;
    for (let i = 0; i < 40 && after < 0; i++) {
      after = await sessionsOfDora().catch(() => -1);
      if (after < 0) await Bun.sleep(500);
    }
    expect(after).toBe(before);
    const [pending] = await t.app.db
      .select()
      .from(oidcDeviceCodes)
      .where(eq(oidcDeviceCodes.userCode, device.user_code.replace("-", "")));
    expect(pending!.status).toBe("pending");
    const renewed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect((await t.request("HEAD", `/0.1/token/${renewed.access_token}`)).status).toBe(204);
  }, 90_000);
});
