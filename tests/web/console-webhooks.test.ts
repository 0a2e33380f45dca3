// The console's webhook delivery log (issue 44 item 4) in Chromium: a real receiver started here
// answers 503 then 200; the log shows each delivery's status, answer and latency, newest first, and
// a redelivery from the console reaches the receiver again with the same `webhook-id`; axe-core
// clean.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { axeViolations, consoleAs, keepScreenshot, launchChromium } from "../helpers/browser.ts";
import { createTenantRow, policyHolder } from "../helpers/fixtures.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";
import { until } from "../helpers/wait.ts";

let t: TestApp;
let served: ServedApp;
let browser: Browser;
let tenant: string;
let status = 503;
const received: string[] = [];
const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    await req.text();
    received.push(req.headers.get("webhook-id") ?? "");
    return new Response(null, { status });
  },
});

beforeAll(async () => {
  t = await createTestApp("pglite", {
    config: {
      outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true, timeout_ms: 2000 },
      outbound_delivery: { retry_initial_seconds: 0.05, retry_max_interval_seconds: 0.3, poll_seconds: 0.2 },
    },
  });
  served = serveApp(t);
  tenant = await createTenantRow(t.app, { name: "Acme" });
  await policyHolder(t, tenant, "hook-admin", ["auth.webhooks.#", "auth.users.me.#"]);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await served?.stop();
  await t?.close();
  receiver.stop(true);
});

test("a webhook's deliveries from the console: failed answers shown, then delivered, then redelivered", async () => {
  const url = `http://127.0.0.1:${receiver.port}/hook`;
  const { context, page, open } = await consoleAs(browser, served.url, "hook-admin");
  await open("#/webhooks");
  await page.click("text=New webhook");
  const form = "form[aria-label='New webhook']";
  await page.fill(`${form} input[name=url]`, url);
  await page.fill(`${form} input[name=events]`, "webhook_ping");
  await page.click(`${form} button[type=submit]`);
  await page.waitForSelector(`tbody td:has-text('${receiver.port}')`);
  await page.click(`button[aria-label='Ping ${url}']`);
  await page.waitForSelector("[role=status]:has-text('Test event queued.')");
  // The receiver answers 503: the delivery stays pending, its last answer shown.
  await until(() => received.length >= 1);
  await page.click(`button[aria-label='Deliveries to ${url}']`);
  const log = `section.panel[aria-label='Deliveries to ${url}']`;
  await page.waitForSelector(`${log} tbody tr:has-text('webhook_ping')`);
  const refresh = () => page.click(`${log} button:text-is('Refresh')`);
  await until(async () => {
    await refresh();
    return (await page.locator(`${log} tbody tr:has-text('503')`).count()) === 1;
  });
  expect(await page.textContent(`${log} tbody tr`)).toContain("pending");
  expect(await axeViolations(page)).toEqual([]);
  // Back up: the retry delivers it.
  status = 200;
  await until(async () => {
    await refresh();
    return (await page.locator(`${log} tbody tr:has-text('delivered')`).count()) === 1;
  });
  expect(await page.textContent(`${log} tbody tr`)).toMatch(/200 · \d+ ms/);
  const firstId = received.at(-1)!;
  const before = received.length;
  await page.click(`${log} button[aria-label^='Redeliver']`);
  await page.waitForSelector("[role=status]:has-text('queued again')");
  await until(() => received.length > before);
  // Standard Webhooks: the same webhook-id, so a receiver deduplicates it.
  expect(received.at(-1)).toBe(firstId);
  await until(async () => {
    await refresh();
    return (await page.locator(`${log} tbody tr:has-text('delivered')`).count()) === 2;
  });
  expect(await axeViolations(page)).toEqual([]);
  await keepScreenshot(page, "console-webhook-deliveries");
  await context.close();
}, 90_000);
