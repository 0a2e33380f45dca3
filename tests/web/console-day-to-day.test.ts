// The console as a tenant administrator uses it day to day (docs/console.md), in Chromium: Status
// hidden from a tenant administrator (shown to the top tenant's), a user's password set with "must
// change at next sign-in", and the audit trail naming its targets.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { consoleRedirectUri, syncConsoleClient } from "../../src/services/console/client.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { axeViolations, consoleAs, launchChromium } from "../helpers/browser.ts";
import { adminToken, createTenantRow, createUserRow, policyHolder } from "../helpers/fixtures.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";

let t: TestApp;
let served: ServedApp;
let browser: Browser;
let tenant = "";
let carol = "";
let group = "";
let root = "";

beforeAll(async () => {
  t = await createTestApp(process.env.TEST_DATABASE_URL ? "postgres" : "pglite");
  served = serveApp(t);
  await syncConsoleClient(t.app, [consoleRedirectUri(served.url)]);
  root = await adminToken(t.app);
  tenant = await createTenantRow(t.app, { name: "VoIP Co" });
  await policyHolder(t, tenant, "alice", ["auth.#"]);
  await policyHolder(t, t.app.topTenantUuid, "olga", ["auth.#"]);
  carol = await createUserRow(t.app, { tenantUuid: tenant, username: "carol", password: "carol-old" });
  group = (await t.request("POST", "/0.1/groups", { token: root, tenant, body: { name: "night-shift" } })).json.uuid;
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await served?.stop();
  await t?.close();
});

/** A page signed in as `username` (a token from POST /0.1/token where the console keeps it). */
async function openAs(username: string, hash: string): Promise<{ context: BrowserContext; page: Page }> {
  const { context, page, open } = await consoleAs(browser, served.url, username);
  await open(hash);
  return { context, page };
}

describe("the console day to day", () => {
  test("Status: hidden from a tenant administrator, shown to the top tenant's", async () => {
    const alice = await openAs("alice", "#/status");
    await alice.page.waitForSelector("main [role=alert]:has-text('administrators of the top tenant')");
    await alice.page.waitForSelector("nav.side a[href='#/users']");
    expect(await alice.page.$$("nav.side a[href='#/status']")).toHaveLength(0);
    expect(await alice.page.textContent("main")).not.toContain("not_top_tenant");
    await alice.context.close();
    const olga = await openAs("olga", "#/status");
    await olga.page.waitForSelector("nav.side a[href='#/status']");
    await olga.page.waitForSelector("main :text('rest_api')");
    await olga.context.close();
  }, 60_000);

  test("a user's password set with 'must change at next sign-in'", async () => {
    const { context, page } = await openAs("alice", `#/users/${carol}`);
    await page.waitForSelector("h1:text-is('User carol')");
    await page.fill("form[aria-label='Set the password'] input[name=password]", "carol-temporary");
    expect(await page.isChecked("form[aria-label='Set the password'] input[name=must_change]")).toBe(true);
    await page.click("form[aria-label='Set the password'] button[type=submit]");
    await page.waitForSelector("[role=status]:has-text('must change it at the next sign-in')");
    expect(await axeViolations(page)).toEqual([]);
    const login = await fetch(`${served.url}/0.1/token`, {
      method: "POST",
      headers: { Authorization: `Basic ${btoa("carol:carol-temporary")}`, "Content-Type": "application/json" },
      body: "{}",
    });
    expect(((await login.json()) as { data: { acl: string[] } }).data.acl).toEqual([
      `auth.users.${carol}.password.update`,
    ]);
    await context.close();
  }, 90_000);

  test("the audit trail names its targets (users, groups) and links them to their screens", async () => {
    // Changes whose targets are a user and a group, made through the API.
    const reset = await t.request("POST", `/0.1/users/password/reset?user_uuid=${carol}`, {
      token: root,
      body: { password: "carol-other" },
    });
    expect(reset.status).toBe(204);
    const renamed = await t.request("PUT", `/0.1/groups/${group}`, {
      token: root,
      tenant,
      body: { name: "day-shift" },
    });
    expect(renamed.status).toBe(204);
    const { context, page } = await openAs("alice", "#/audit");
    await page.waitForSelector("h1:text-is('Audit trail')");
    const entries = "section[aria-label='Audit entries']";
    await page.waitForSelector(
      `${entries} tr:has-text('user.password.set') a[href='#/users/${carol}']:text-is('carol')`,
    );
    await page.waitForSelector(
      `${entries} tr:has-text('group.update') a[href='#/groups/${group}']:text-is('day-shift')`,
    );
    expect(await axeViolations(page)).toEqual([]);
    await context.close();
  }, 90_000);
});
