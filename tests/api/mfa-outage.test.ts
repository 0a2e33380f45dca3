// A database outage during the login page's second step and on the account page (private
// PostgreSQL cluster, stopped by the test): error pages (503), never a redirect or a half-issued
// code; the passkey API answers 503 with the one error body.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { currentCode } from "../../src/services/auth/totp.ts";
import type { TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import {
  openLoginPage,
  serveApp,
  submitLogin,
  type ServedApp,
  startClusterApp,
  stopClusterApp,
} from "../helpers/oidc.ts";
import { pgClusterAvailable, type PgCluster } from "../helpers/pg-cluster.ts";

describe.skipIf(!pgClusterAvailable)("the second step and the account page during a database outage", () => {
  let cluster: PgCluster;
  let t: TestApp;
  let served: ServedApp;

  beforeAll(async () => {
    ({ cluster, t, served } = await startClusterApp({
      mfa: { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 3).toString("base64") }] },
    }));
  }, 120_000);
  afterAll(() => stopClusterApp({ cluster, t, served }), 60_000);

  test("503 pages and bodies, no redirect, no code", async () => {
    const tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    const uuid = await createUserRow(t.app, { tenantUuid: tenant, username: "olga", password: "olga-secret" });
    const own = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: uuid, tenantUuid: tenant })).token;
    const started = await t.request("POST", "/0.1/users/me/mfa/totp", { token: own });
    await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
      token: own,
      body: { code: currentCode(started.json.secret) },
    });
    const client = (
      await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: { name: "rp", client_type: "confidential", redirect_uris: ["https://rp.example.com/cb"] },
      })
    ).json;
    const url = `${served.url}/0.1/oidc/authorize?response_type=code&scope=openid&client_id=${client.client_id}&redirect_uri=${encodeURIComponent("https://rp.example.com/cb")}`;
    const page = await openLoginPage(url);
    const step = await submitLogin(served.url, page, "olga", "olga-secret");
    expect(step.status).toBe(200);
    const pending = /name="pending" value="([^"]+)"/.exec(await step.text())![1]!;
    await cluster.stop();
    const submitted = await fetch(`${served.url}/0.1/oidc/authorize-mfa`, {
      method: "POST",
      redirect: "manual",
      body: new URLSearchParams({
        ...page.hidden,
        pending,
        code: currentCode(started.json.secret, Date.now() + 30_000),
      }),
      headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: page.cookie },
    });
    expect(submitted.status).toBe(503);
    expect(submitted.headers.get("location")).toBeNull();
    expect(await submitted.text()).toContain("Signing in is not possible right now");
    // The account page's form needs no database; its sign-in does.
    const account = await openLoginPage(`${served.url}/0.1/oidc/account`);
    expect(account.status).toBe(200);
    const signIn = await fetch(`${served.url}/0.1/oidc/account`, {
      method: "POST",
      redirect: "manual",
      body: new URLSearchParams({ ...account.hidden, step: "sign-in", username: "olga", password: "olga-secret" }),
      headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: account.cookie },
    });
    expect(signIn.status).toBe(503);
    expect(signIn.headers.get("content-type")).toContain("text/html");
    expect(signIn.headers.get("set-cookie") ?? "").not.toContain("tessera_account");
    const api = await t.request("GET", `/0.1/users/${uuid}/mfa/passkeys`, { token: admin });
    expect(api.status).toBe(503);
    expect(api.json.error_id).toBeDefined();
  }, 60_000);
});
