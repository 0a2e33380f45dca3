// The console's one-click stock roles on a user's page: "Make tenant administrator" attaches the
// stock tessera_tenant_admin policy; for a caller who could not grant its entries the API's 403 is
// shown and nothing is attached. In Chromium, axe-core on the page.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { consoleRedirectUri, syncConsoleClient } from "../../src/services/console/client.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { axeViolations, consoleAs, launchChromium } from "../helpers/browser.ts";
import { adminToken, createTenantRow, createUserRow, policyHolder } from "../helpers/fixtures.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";

let t: TestApp;
let served: ServedApp;
let browser: Browser;
let root: string;
let tenant: string;

/** The console signed in as `username` (its token put where the console keeps it), at `hash`. */
async function openAs(username: string, hash: string): Promise<Page> {
  const { page, open } = await consoleAs(browser, served.url, username);
  await open(hash);
  await page.waitForSelector("section[aria-labelledby=s-roles]");
  return page;
}

const policiesOf = async (user: string) =>
  (await t.request("GET", `/0.1/users/${user}/policies`, { token: root })).json.items.map(
    (p: { slug: string }) => p.slug,
  );

beforeAll(async () => {
  t = await createTestApp(process.env.TEST_DATABASE_URL ? "postgres" : "pglite");
  served = serveApp(t);
  await syncConsoleClient(t.app, [consoleRedirectUri(served.url)]);
  root = await adminToken(t.app);
  tenant = await createTenantRow(t.app, { name: "Customer" });
  await policyHolder(t, tenant, "chief", ["auth.#"]);
  await policyHolder(t, tenant, "clerk", ["auth.users.#", "auth.policies.read"]);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await served?.stop();
  await t?.close();
});

test("an administrator makes a user the tenant's administrator in one click", async () => {
  const dana = await createUserRow(t.app, { tenantUuid: tenant, username: "dana" });
  const page = await openAs("chief", `#/users/${dana}`);
  expect(await axeViolations(page)).toEqual([]);
  await page.click("button:text-is('Make tenant administrator')");
  await page.waitForSelector("dialog[open]");
  await page.click('dialog[open] button:text-is("Attach")');
  await page.waitForSelector("section[aria-labelledby=s-policies] a:text('tessera_tenant_admin')");
  expect(await policiesOf(dana)).toContain("tessera_tenant_admin");
  await page.context().close();
}, 60_000);

test("a caller who could not grant auth.# sees the API's refusal, and nothing is attached", async () => {
  const erin = await createUserRow(t.app, { tenantUuid: tenant, username: "erin" });
  const page = await openAs("clerk", `#/users/${erin}`);
  await page.click("button:text-is('Make tenant administrator')");
  await page.click('dialog[open] button:text-is("Attach")');
  await page.waitForSelector("text=auth.#");
  expect(await policiesOf(erin)).toEqual([]);
  await page.context().close();
}, 60_000);
