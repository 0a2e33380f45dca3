// The console's upstream-providers screen (issue 40 item 6) in Chromium: a tenant administrator adds a
// provider (a real one: panva's oidc-provider in a child process), an unreachable issuer refused with
// the API's reason beside the form, the redirect URI to register shown at once, the display name
// changed with the stored secret kept, the provider removed; axe-core clean at each state; another
// tenant's administrator sees none of it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { axeViolations, consoleAs, keepScreenshot, launchChromium } from "../helpers/browser.ts";
import { adminToken, createTenantRow, policyHolder } from "../helpers/fixtures.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";
import { closedPort } from "../helpers/smtp-server.ts";
import { startUpstreamOidc, type UpstreamOidc } from "../helpers/upstream-oidc.ts";

let t: TestApp;
let served: ServedApp;
let browser: Browser;
let upstream: UpstreamOidc;
let root: string;
const tenants: Record<"a" | "b", string> = { a: "", b: "" };

beforeAll(async () => {
  t = await createTestApp("pglite", {
    config: { outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true } },
  });
  served = serveApp(t);
  root = await adminToken(t.app);
  tenants.a = await createTenantRow(t.app, { name: "Acme" });
  tenants.b = await createTenantRow(t.app, { name: "Beta" });
  await policyHolder(t, tenants.a, "upstream-admin", ["auth.backends.oidc.#", "auth.users.me.#"]);
  await policyHolder(t, tenants.b, "other-admin", ["auth.backends.oidc.#", "auth.users.me.#"]);
  upstream = await startUpstreamOidc();
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await upstream?.stop();
  await served?.stop();
  await t?.close();
});

const form = (label: string) => `form[aria-label='${label}']`;

test("add, change and remove an upstream provider from the console", async () => {
  const { context, page, open } = await consoleAs(browser, served.url, "upstream-admin");
  await open("#/upstream");
  await page.waitForSelector("h1:text('Upstream providers')");
  await page.click("text=New upstream provider");
  const create = form("New upstream provider");
  await page.fill(`${create} input[name=name]`, "corp");
  await page.fill(`${create} input[name=display_name]`, "Corp SSO");
  // Nobody listens there: the API cannot read its discovery document and says so.
  await page.fill(`${create} input[name=issuer]`, `http://127.0.0.1:${closedPort()}`);
  await page.fill(`${create} input[name=client_id]`, "tessera-client");
  await page.fill(`${create} input[name=client_secret]`, "first-secret");
  await page.click(`${create} button[type=submit]`);
  await page.waitForSelector(`${create} [role=alert]`);
  expect(await axeViolations(page)).toEqual([]);
  await page.fill(`${create} input[name=issuer]`, upstream.issuer);
  await page.selectOption(`${create} select[name=provisioning]`, "create");
  await page.check(`${create} input[name=upstream_logout]`);
  await page.check(`${create} input[name=trust_amr]`);
  await page.click(`${create} button[type=submit]`);
  const registered = await page.waitForSelector(".secret code.block");
  const redirectUri = (await registered.textContent()) ?? "";
  // The redirect, back-channel logout and post-logout URIs: all three to register upstream.
  expect(await page.locator(".secret code.block").count()).toBe(3);
  expect(redirectUri).toMatch(/\/oidc\/upstream\/[0-9a-f-]{36}\/callback$/);
  await page.waitForSelector("tbody td:text-is('Corp SSO')");
  expect(await axeViolations(page)).toEqual([]);
  await keepScreenshot(page, "console-upstream");

  const listed = await t.request("GET", "/0.1/backends/oidc", { token: root, tenant: tenants.a });
  expect(listed.json.items).toHaveLength(1);
  const provider = listed.json.items[0];
  // The redirect URI is built from the request's address (no public_url here): compare its path.
  expect([
    provider.issuer,
    provider.provisioning,
    provider.upstream_logout,
    provider.trust_amr,
    new URL(provider.redirect_uri).pathname,
  ]).toEqual([upstream.issuer, "create", true, true, new URL(redirectUri).pathname]);
  expect(JSON.stringify(listed.json)).not.toContain("first-secret");

  // Changed: the secret field left empty keeps the stored one (the API is sent no client_secret).
  await page.click("button[aria-label='Change Corp SSO']");
  const change = form("Change upstream provider");
  expect(await page.inputValue(`${change} input[name=client_secret]`)).toBe("");
  await page.fill(`${change} input[name=display_name]`, "Corp single sign-on");
  await page.click(`${change} button[type=submit]`);
  await page.waitForSelector("[role=status]:text('Saved Corp single sign-on.')");
  await page.waitForSelector("tbody td:text-is('Corp single sign-on')");
  const stored = await t.request("GET", `/0.1/backends/oidc/${provider.uuid}`, { token: root, tenant: tenants.a });
  expect(stored.json.display_name).toBe("Corp single sign-on");

  // Another tenant's administrator sees an empty list.
  const other = await consoleAs(browser, served.url, "other-admin");
  await other.open("#/upstream");
  await other.page.waitForSelector("section[aria-label='Upstream providers'][aria-busy='false']");
  expect(await other.page.locator("tbody td:text-is('Corp single sign-on')").count()).toBe(0);
  await other.context.close();

  await page.click("button[aria-label='Remove Corp single sign-on']");
  await page.waitForSelector("dialog[open]");
  await page.click('dialog[open] button:text-is("Remove")');
  await page.waitForSelector("[role=status]:text('Removed Corp single sign-on.')");
  const after = await t.request("GET", "/0.1/backends/oidc", { token: root, tenant: tenants.a });
  expect(after.json.items).toHaveLength(0);
  await context.close();
}, 90_000);
