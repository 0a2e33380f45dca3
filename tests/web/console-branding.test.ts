// The console's branding form (issue 43): a tenant administrator sets the product name and a
// primary colour; a colour below WCAG AA contrast is refused with the API's reason, shown beside the
// form; axe-core clean. The page then wears it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { axeViolations, consoleAs, keepScreenshot, launchChromium } from "../helpers/browser.ts";
import { adminToken, createTenantRow, policyHolder } from "../helpers/fixtures.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";

let t: TestApp;
let served: ServedApp;
let browser: Browser;
let tenant: string;

beforeAll(async () => {
  t = await createTestApp("pglite");
  served = serveApp(t);
  tenant = await createTenantRow(t.app, { name: "Acme" });
  await policyHolder(t, tenant, "brand-admin", ["auth.tenants.#", "auth.users.me.#"]);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await served?.stop();
  await t?.close();
});

test("branding from the console: a contrast refusal shown, then saved", async () => {
  const { context, page, open } = await consoleAs(browser, served.url, "brand-admin");
  await open("#/tenants");
  await page.waitForSelector(".tenant .name:text-is('Acme')");
  await page.click("button[aria-label='Branding of Acme']");
  await page.waitForSelector("form[aria-label='Tenant change']");
  await page.fill("input[name=product_name]", "Acme Phone");
  await page.fill("input[name=primary_color]", "#ffeb3b");
  await page.click("form[aria-label='Tenant change'] button[type=submit]");
  const refusal = await page.waitForSelector("[role=alert]");
  expect(await refusal.textContent()).toContain("WCAG AA");
  expect(await axeViolations(page)).toEqual([]);
  await page.fill("input[name=primary_color]", "#1a4d2e");
  await page.click("form[aria-label='Tenant change'] button[type=submit]");
  await page.waitForSelector("[role=status]:text('Branding of Acme saved.')");
  expect(await axeViolations(page)).toEqual([]);
  await keepScreenshot(page, "console-branding");
  const admin = await adminToken(t.app);
  const saved = await t.request("GET", `/0.1/tenants/${tenant}/branding`, { token: admin });
  expect([saved.json.product_name, saved.json.primary_color, saved.json.background_color]).toEqual([
    "Acme Phone",
    "#1a4d2e",
    null,
  ]);
  await context.close();
}, 60_000);
