// The console's Sessions screen in Chromium with a client's own session present (OAuth 2.0 client
// credentials, RFC 6749 §4.4: `user_uuid` null in the list): every row is shown, the client's session
// says it has no user, and it can be revoked from the screen like a user's.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { consoleRedirectUri, syncConsoleClient } from "../../src/services/console/client.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { consoleAs, launchChromium } from "../helpers/browser.ts";
import { createTenantRow, policyHolder, tokenFor } from "../helpers/fixtures.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";
import { closedPort } from "../helpers/smtp-server.ts";

let t: TestApp;
let served: ServedApp;
let browser: Browser;
let tenant: string;
let alice: string;

beforeAll(async () => {
  const port = closedPort();
  t = await createTestApp(process.env.TEST_DATABASE_URL ? "postgres" : "pglite", {
    config: { public_url: `http://127.0.0.1:${port}` },
  });
  served = serveApp(t, port);
  await syncConsoleClient(t.app, [consoleRedirectUri(served.url)]);
  tenant = await createTenantRow(t.app, { name: "Acme" });
  // alice administers her tenant: a policy of auth.# attached, so her console token holds it.
  alice = await policyHolder(t, tenant, "alice", ["auth.#"]);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await served?.stop();
  await t?.close();
});

/** A session of the tenant's own OIDC client, from the client credentials grant: the list's `user_uuid` null. */
async function clientSession(adminToken: string): Promise<string> {
  const client = await t.request("POST", "/0.1/oidc/clients", {
    token: adminToken,
    body: {
      name: "Billing daemon",
      client_type: "confidential",
      redirect_uris: [],
      grant_types: ["client_credentials"],
    },
  });
  expect(client.status).toBe(201);
  const before = new Set(await sessionUuids(adminToken));
  const res = await fetch(`${served.url}/0.1/oidc/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "client_credentials",
      client_id: client.json.client_id,
      client_secret: client.json.client_secret,
    }),
  });
  expect(res.status).toBe(200);
  const list = await t.request("GET", "/0.1/sessions?recurse=true", { token: adminToken });
  const created = (list.json.items as Array<{ uuid: string; user_uuid: string | null }>).filter(
    (s) => !before.has(s.uuid),
  );
  expect(created.map((s) => s.user_uuid)).toEqual([null]);
  return created[0]!.uuid;
}

async function sessionUuids(token: string): Promise<string[]> {
  const list = await t.request("GET", "/0.1/sessions?recurse=true", { token });
  expect(list.status).toBe(200);
  return (list.json.items as Array<{ uuid: string }>).map((s) => s.uuid);
}

test("Sessions: a client's own session is listed beside the users', says it has no user, and is revoked", async () => {
  const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant, userUuid: alice })).token;
  const machine = await clientSession(admin);
  const { context, page, open } = await consoleAs(browser, served.url, "alice", { timeout: 20_000 });
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  try {
    await open("#/sessions");
    await page.waitForSelector("h1:text-is('Sessions')");
    // Every session of the tenant is a row: alice's two (the fixture's token and the console's) and the client's.
    const rows = page.locator("tbody tr");
    await page.waitForSelector(`tbody tr code[title='${machine}']`);
    expect(await rows.count()).toBe((await sessionUuids(admin)).length);
    const row = page.locator("tbody tr", { has: page.locator(`code[title='${machine}']`) });
    expect(await row.locator("td").nth(1).textContent()).toBe("none (a client's own)");
    await page.waitForSelector(`tbody a[title='User ${alice}']:text-is('alice')`);
    await row.locator("button:text-is('Revoke')").click();
    await page.waitForSelector("dialog[open]");
    await page.click('dialog[open] button:text-is("Revoke")');
    await page.waitForSelector(`tbody tr code[title='${machine}']`, { state: "detached" });
    expect(await sessionUuids(admin)).not.toContain(machine);
    expect(errors).toEqual([]);
  } finally {
    await context.close();
  }
}, 60_000);
