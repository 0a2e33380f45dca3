// GET /0.1/api/docs in a real browser (Debian's chromium, driven by playwright-core): the page
// loads its assets from this service (no CDN), renders the document, lists the token operations,
// and logs no console error.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { createTestApp, type TestApp } from "../helpers/app.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

let t: TestApp;
let server: ReturnType<typeof Bun.serve>;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `chromium is missing at ${CHROMIUM}: apt-get install -y chromium (.ci/run does), or set CHROMIUM_PATH`,
    );
  t = await createTestApp("pglite");
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (req) => t.http.fetch(req, { remoteAddr: "127.0.0.1" }),
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  server?.stop(true);
  await t?.close();
});

describe("the API reference page", () => {
  test("serves its assets from the service itself", async () => {
    const page = await t.request("GET", "/0.1/api/docs");
    expect(page.status).toBe(200);
    expect(page.headers.get("Content-Type")).toContain("text/html");
    expect(page.text).not.toMatch(/https?:\/\//); // nothing from a CDN
    const js = await t.request("GET", "/0.1/api/docs/swagger-ui-bundle.js");
    expect([js.status, js.headers.get("Content-Type")]).toEqual([200, "application/javascript; charset=utf-8"]);
    expect((await t.request("GET", "/0.1/api/docs/swagger-ui.css")).status).toBe(200);
    const other = await t.request("GET", "/0.1/api/docs/..%2Fpackage.json");
    expect([other.status, other.json.error_id]).toEqual([404, "not-found"]);
  });

  test("renders in Chromium: the token operations are listed, no console error", async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`page: ${e.message}`));
    page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()}`));
    const external: string[] = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(`http://127.0.0.1:${server.port}/`) && !r.url().startsWith("data:"))
        external.push(r.url());
    });
    const res = await page.goto(`http://127.0.0.1:${server.port}/0.1/api/docs`);
    expect(res?.status()).toBe(200);
    // Tags start folded (docExpansion: none, no model section): the page shows its tags and their
    // descriptions without rendering every operation; opening one tag lists its operations.
    await page.waitForSelector("#operations-tag-tokens", { timeout: 30_000 });
    expect(await page.textContent("body")).toContain("what every other service asks on each request");
    await page.click("#operations-tag-tokens");
    await page.waitForSelector(".opblock-summary-path", { timeout: 30_000 });
    const paths = await page.$$eval(".opblock-summary-path", (els) =>
      els.map((e) => e.getAttribute("data-path") ?? e.textContent ?? ""),
    );
    expect(paths).toEqual(expect.arrayContaining(["/token", "/token/{token}", "/token/{token}/scopes/check"]));
    expect(await page.textContent("body")).toContain("Tessera authentication service");
    await page.close();
    expect(problems).toEqual([]);
    expect(external).toEqual([]);
  }, 60_000);
});
