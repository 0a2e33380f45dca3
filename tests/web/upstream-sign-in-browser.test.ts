// The login page's "Continue with …" button in Chromium (issue 40): a real upstream provider (panva's
// oidc-provider, child process), a relying party of Tessera finishing its code flow with openid-client,
// axe-core on the page that carries the button; and the second factor still asked after the upstream
// vouched for a user who has one.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { Browser } from "playwright-core";
import { upstreamOidcLinks } from "../../src/db/schema.ts";
import { currentCode } from "../../src/services/auth/totp.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import {
  axeViolations,
  keepScreenshot,
  launchChromium,
  type RelyingParty,
  startRelyingParty,
} from "../helpers/browser.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";
import { addUpstreamProvider, startUpstreamOidc, type UpstreamOidc } from "../helpers/upstream-oidc.ts";

let t: TestApp;
let served: ServedApp;
let browser: Browser;
let upstream: UpstreamOidc;
let rp: RelyingParty;
let tenant: string;
let provider: string;

beforeAll(async () => {
  t = await createTestApp("pglite", {
    config: {
      outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true },
      mfa: { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 7).toString("base64") }] },
    },
  });
  served = serveApp(t);
  browser = await launchChromium();
  upstream = await startUpstreamOidc({
    accounts: {
      dana: { preferred_username: "dana.up", email: "dana@corp.example", email_verified: true, given_name: "Dana" },
      erin: { preferred_username: "erin.up" },
    },
  });
  tenant = await createTenantRow(t.app);
  const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
  rp = await startRelyingParty(t, served.url, admin);
  provider = (
    await addUpstreamProvider(served.url, admin, upstream, {
      name: "corp",
      display_name: "Corp SSO",
      issuer: upstream.issuer,
      provisioning: "create",
    })
  ).uuid;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  rp?.stop();
  served?.stop();
  await upstream?.stop();
  await t?.close();
});

describe("Continue with an upstream provider, in Chromium", () => {
  test("the button (axe: no violation), the upstream, back: the application signed in, amr oidc", async () => {
    await upstream.set({ account: "dana", tamper: null });
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(await rp.authorizationUrl({ scope: "openid profile" }));
    const button = page.getByRole("link", { name: "Continue with Corp SSO" });
    expect(await button.isVisible()).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "upstream-login-button");
    await Promise.all([page.waitForURL(`http://127.0.0.1:${rp.port}/**`), button.click()]);
    expect(await page.textContent("#who")).toBe("dana.up");
    expect(await page.textContent("#amr")).toBe("oidc");
    await context.close();
  });

  test("a linked user with TOTP: the second step is asked after the upstream, then the application", async () => {
    // erin exists here with a TOTP factor and is linked to the upstream identity `erin`.
    const uuid = await createUserRow(t.app, { tenantUuid: tenant, username: "erin.up", password: "erin-pw" });
    await t.app.db.insert(upstreamOidcLinks).values({ providerUuid: provider, subject: "erin", userUuid: uuid });
    // Signing in through the provider is the user's method (as SAML users': PUT /idp/oidc/users/{uuid}).
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    expect((await t.request("PUT", `/0.1/idp/oidc/users/${uuid}`, { token: admin })).status).toBe(204);
    const own = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: uuid, tenantUuid: tenant })).token;
    const started = await t.request("POST", "/0.1/users/me/mfa/totp", { token: own });
    await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
      token: own,
      body: { code: currentCode(started.json.secret) },
    });
    await upstream.set({ account: "erin", tamper: null });
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(await rp.authorizationUrl({ scope: "openid profile" }));
    await Promise.all([
      page.waitForURL("**/upstream-sign-in"),
      page.getByRole("link", { name: "Continue with Corp SSO" }).click(),
    ]);
    expect(await page.textContent("h1")).toBe("Two-step verification");
    expect(await axeViolations(page)).toEqual([]);
    await page.fill("#code", currentCode(started.json.secret, Date.now() + 30_000));
    await Promise.all([page.waitForURL(`http://127.0.0.1:${rp.port}/**`), page.click("button[type=submit]")]);
    expect(await page.textContent("#who")).toBe("erin.up");
    expect((await page.textContent("#amr"))!.split(" ")).toContain("otp");
    await context.close();
    const links = await t.app.db.select().from(upstreamOidcLinks).where(eq(upstreamOidcLinks.userUuid, uuid));
    expect(links).toHaveLength(1);
  });
});
