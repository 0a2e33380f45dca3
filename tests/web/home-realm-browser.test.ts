// Home-realm discovery in Chromium (issue 40 item 2): the login page asks the login name first; a name
// of the tenant's domain goes through its upstream provider (panva's oidc-provider, child process) and
// comes back signed in to the relying party; any other name gets the password step, the name carried
// read-only for password managers. axe-core on both steps.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import {
  axeViolations,
  keepScreenshot,
  launchChromium,
  type RelyingParty,
  startRelyingParty,
} from "../helpers/browser.ts";
import { adminToken, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";
import { addUpstreamProvider, startUpstreamOidc, type UpstreamOidc } from "../helpers/upstream-oidc.ts";

let t: TestApp;
let served: ServedApp;
let browser: Browser;
let upstream: UpstreamOidc;
let rp: RelyingParty;
let tenant: string;

beforeAll(async () => {
  t = await createTestApp("pglite", {
    config: { outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true } },
  });
  served = serveApp(t);
  browser = await launchChromium();
  upstream = await startUpstreamOidc({
    accounts: { dana: { preferred_username: "dana.up", email: "dana@corp.example", email_verified: true } },
  });
  const made = await t.request("POST", "/0.1/tenants", {
    token: await adminToken(t.app),
    body: { name: "corp", domain_names: ["corp.example"] },
  });
  tenant = made.json.uuid;
  const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
  rp = await startRelyingParty(t, served.url, admin);
  await addUpstreamProvider(served.url, admin, upstream, {
    name: "corp",
    display_name: "Corp SSO",
    issuer: upstream.issuer,
    provisioning: "create",
  });
  await createUserRow(t.app, { tenantUuid: tenant, username: "paula@elsewhere.example", password: "paula-pw-1" });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  rp?.stop();
  served?.stop();
  await upstream?.stop();
  await t?.close();
});

describe("identifier first, in Chromium", () => {
  test("a name of the tenant's domain: the upstream, back signed in (axe: no violation)", async () => {
    await upstream.set({ account: "dana", tamper: null });
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(await rp.authorizationUrl({ scope: "openid profile" }));
    expect(await page.locator("#password").count()).toBe(0);
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "home-realm-identifier");
    await page.fill("#username", "Dana@Corp.Example");
    await Promise.all([
      page.waitForURL(`http://127.0.0.1:${rp.port}/**`),
      page.getByRole("button", { name: "Next" }).click(),
    ]);
    expect(await page.textContent("#who")).toBe("dana.up");
    expect(await page.textContent("#amr")).toBe("oidc");
    await context.close();
  });

  test("any other name: the password step, the name read-only, then signed in (axe: no violation)", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(await rp.authorizationUrl({ scope: "openid profile" }));
    await page.fill("#username", "paula@elsewhere.example");
    await Promise.all([page.waitForSelector("#password"), page.getByRole("button", { name: "Next" }).click()]);
    const username = page.locator("#username");
    expect(await username.inputValue()).toBe("paula@elsewhere.example");
    expect(await username.getAttribute("readonly")).not.toBeNull();
    expect(await username.getAttribute("autocomplete")).toBe("username");
    expect(await page.getByRole("link", { name: "Not you? Use another account" }).isVisible()).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "home-realm-password");
    await page.fill("#password", "paula-pw-1");
    await Promise.all([
      page.waitForURL(`http://127.0.0.1:${rp.port}/**`),
      page.getByRole("button", { name: "Sign in" }).click(),
    ]);
    expect(await page.textContent("#who")).toBe("paula@elsewhere.example");
    await context.close();
  });
});
