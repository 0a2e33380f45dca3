// A database outage during an OpenID Connect sign-in (private PostgreSQL cluster, stopped by the
// test): the login page, single sign-on, the consent answer and logout answer an error page (503),
// the token endpoint `temporarily_unavailable`, and no code is ever issued.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as oidc from "openid-client";
import type { TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import {
  openLoginPage,
  serveApp,
  submitLogin,
  TestBrowser,
  type ServedApp,
  startClusterApp,
  stopClusterApp,
} from "../helpers/oidc.ts";
import { pgClusterAvailable, type PgCluster } from "../helpers/pg-cluster.ts";

describe.skipIf(!pgClusterAvailable)("OpenID Connect sign-in during a database outage", () => {
  let cluster: PgCluster;
  let t: TestApp;
  let served: ServedApp;

  beforeAll(async () => {
    ({ cluster, t, served } = await startClusterApp());
  }, 120_000);
  afterAll(() => stopClusterApp({ cluster, t, served }), 60_000);

  test("login page and token endpoint: 503 answers, no redirect, no code", async () => {
    const tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    await createUserRow(t.app, { tenantUuid: tenant, username: "dora", password: "dora-secret" });
    const client = (
      await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: {
          name: "rp",
          client_type: "confidential",
          redirect_uris: ["https://rp.example.com/cb"],
          first_party: true,
        },
      })
    ).json;
    const issuer = `${served.url}/0.1/oidc`;
    const url = `${issuer}/authorize?response_type=code&scope=openid&client_id=${client.client_id}&redirect_uri=${encodeURIComponent("https://rp.example.com/cb")}&code_challenge=${await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier())}&code_challenge_method=S256`;
    const page = await openLoginPage(url);
    expect(page.status).toBe(200);
    // A browser signed in (single sign-on) and one on a third-party client's consent page.
    const signedIn = new TestBrowser(served.url);
    expect((await signedIn.signIn(url, "dora", "dora-secret")).res.status).toBe(303);
    const partner = (
      await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: { name: "partner", client_type: "confidential", redirect_uris: ["https://rp.example.com/cb"] },
      })
    ).json;
    const consenting = new TestBrowser(served.url);
    const consentPage = await consenting.signIn(
      url.replace(client.client_id, partner.client_id),
      "dora",
      "dora-secret",
    );
    expect(consentPage.html).toContain("wants to access your account");
    await cluster.stop();
    for (const answer of [
      await signedIn.get(url),
      await consenting.consent(consentPage.html, "allow"),
      await signedIn.get(`${issuer}/logout?client_id=${client.client_id}`),
    ]) {
      expect(answer.res.status).toBe(503);
      expect(answer.location).toBeNull();
      expect(answer.html).toContain("Signing in is not possible right now");
    }
    const submitted = await submitLogin(served.url, page, "dora", "dora-secret");
    expect(submitted.status).toBe(503);
    expect(submitted.headers.get("location")).toBeNull();
    expect(submitted.headers.get("content-type")).toContain("text/html");
    expect(await submitted.text()).toContain("Signing in is not possible right now");
    const again = await openLoginPage(url);
    expect(again.status).toBe(503);
    expect(again.html).toContain("Signing in is not possible right now");
    const token = await fetch(`${issuer}/token`, {
      method: "POST",
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: "x",
        client_id: client.client_id,
        client_secret: client.client_secret,
      }),
    });
    expect(token.status).toBe(503);
    expect(await token.json()).toMatchObject({ error: "temporarily_unavailable" });
  }, 60_000);
});
