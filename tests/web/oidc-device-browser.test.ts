// The device flow's verification page in a real browser (Debian's chromium, driven by
// playwright-core) while openid-client, as the device, polls the token endpoint: a person types
// the code with JavaScript off, signs in (a wrong password first), and the device gets its tokens.
// axe-core finds no accessibility violation on any step or error state.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as oidc from "openid-client";
import type { Browser } from "playwright-core";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { axeViolations, keepScreenshot, launchChromium } from "../helpers/browser.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { discoverClient, serveApp, startAuthorization, TestBrowser, type ServedApp } from "../helpers/oidc.ts";

let t: TestApp;
let served: ServedApp;
let browser: Browser;
let config: oidc.Configuration;
let web: oidc.Configuration;
const REDIRECT = "https://rp.example.com/callback";

beforeAll(async () => {
  t = await createTestApp("pglite", { config: { oidc: { device_poll_interval: 1 } } });
  served = serveApp(t);
  const tenant = await createTenantRow(t.app);
  const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
  await createUserRow(t.app, { tenantUuid: tenant, username: "erin", password: "erin-secret" });
  const client = (
    await t.request("POST", "/0.1/oidc/clients", {
      token: admin,
      body: {
        name: "Lobby Phone",
        client_type: "public",
        grant_types: ["urn:ietf:params:oauth:grant-type:device_code"],
      },
    })
  ).json;
  config = await oidc.discovery(new URL(`${served.url}/0.1/oidc`), client.client_id, undefined, oidc.None(), {
    execute: [oidc.allowInsecureRequests],
  });
  const webClient = await t.request("POST", "/0.1/oidc/clients", {
    token: admin,
    body: { name: "Portal", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true },
  });
  web = await discoverClient(new URL(`${served.url}/0.1/oidc`), webClient.json);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await served?.stop();
  await t?.close();
});

describe("the device verification page in Chromium", () => {
  test("with JavaScript off: the code as typed, a wrong password, then the right one; the polling device gets the user", async () => {
    const start = await oidc.initiateDeviceAuthorization(config, { scope: "openid profile" });
    const polling = oidc.pollDeviceAuthorizationGrant(config, start);
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const cspViolations: string[] = [];
    page.on("console", (m) => m.text().includes("Content Security Policy") && cspViolations.push(m.text()));
    expect((await page.goto(start.verification_uri))?.status()).toBe(200);
    expect(await page.title()).toBe("Connect a device");
    expect(await page.evaluate("document.activeElement.id")).toBe("user_code");
    // Typed as a person would: lower case, without the dash.
    await page.fill("#user_code", start.user_code.replace("-", "").toLowerCase());
    await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
    expect(await page.textContent("strong")).toBe("Lobby Phone");
    expect(await page.textContent("#device-code")).toBe(start.user_code);
    // Focus order: username (focused on arrival), password, Allow, Deny.
    expect(await page.evaluate("document.activeElement.id")).toBe("username");
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press("Tab");
      order.push(await page.evaluate("document.activeElement.id || document.activeElement.textContent"));
    }
    expect(order).toEqual(["password", "Allow", "Deny"]);
    await keepScreenshot(page, "oidc-device-confirm");
    await page.fill("#username", "erin");
    await page.fill("#password", "wrong");
    await Promise.all([page.waitForLoadState(), page.click("button[value=allow]")]);
    expect(await page.textContent("[role=alert]")).toBe("Wrong username or password.");
    await page.fill("#password", "erin-secret");
    await Promise.all([page.waitForLoadState(), page.click("button[value=allow]")]);
    expect(await page.textContent("h1")).toBe("Device connected");
    const tokens = await polling;
    expect(tokens.claims()).toMatchObject({ preferred_username: "erin" });
    expect((await t.request("HEAD", `/0.1/token/${tokens.access_token}`)).status).toBe(204);
    expect(cspViolations).toEqual([]);
    await context.close();
  }, 30_000);

  test("axe-core: no violation on the code step, its error, the sign-in step, its error, and the outcome", async () => {
    const start = await oidc.initiateDeviceAuthorization(config, {});
    const page = await browser.newPage();
    await page.goto(start.verification_uri);
    expect(await axeViolations(page)).toEqual([]);
    await page.fill("#user_code", "BBBB-BBBB");
    await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
    expect(await page.isVisible("[role=alert]")).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await page.goto(start.verification_uri_complete!);
    expect(await axeViolations(page)).toEqual([]);
    await page.fill("#username", "erin");
    await page.fill("#password", "wrong");
    await Promise.all([page.waitForLoadState(), page.click("button[value=allow]")]);
    expect(await page.isVisible("[role=alert]")).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await Promise.all([page.waitForLoadState(), page.click("button[value=deny]")]);
    expect(await page.textContent("h1")).toBe("Request denied");
    expect(await axeViolations(page)).toEqual([]);
    await page.close();
  }, 30_000);

  test("signed in on the login page: 'Continue as erin' focused, then Deny; the link to another account; no axe violation", async () => {
    // The browser session, made by signing in on the login page, handed to Chromium as its cookie.
    const signIn = new TestBrowser(served.url);
    const r = await signIn.signIn((await startAuthorization(web, REDIRECT)).url, "erin", "erin-secret");
    expect(r.res.status).toBe(303);
    const session = /tessera_oidc_session=([^;]+)/.exec(signIn.cookie)![1]!;
    // (axe-core needs the DevTools protocol's evaluation, which JavaScript off disables; the page's CSP runs no script anyway.)
    const context = await browser.newContext();
    await context.addCookies([{ name: "tessera_oidc_session", value: session, url: `${served.url}/0.1/oidc/` }]);
    const page = await context.newPage();
    const start = await oidc.initiateDeviceAuthorization(config, {});
    await page.goto(start.verification_uri_complete!);
    expect(await page.textContent("#continue")).toBe("Continue as erin");
    expect(await page.evaluate("document.activeElement.id")).toBe("continue");
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "oidc-device-continue-as");
    await Promise.all([page.waitForLoadState(), page.click("text=Use another account")]);
    expect(await page.isVisible("#password")).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await page.goBack();
    await Promise.all([page.waitForLoadState(), page.click("button[value=deny]")]);
    expect(await page.textContent("h1")).toBe("Request denied");
    await context.close();
  }, 30_000);
});
