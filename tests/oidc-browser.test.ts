// The hosted login page in a real browser (Debian's chromium, driven by playwright-core): a user
// signs in with JavaScript off, the page's CSP lets its form redirect to the registered client and
// nothing else, and axe-core finds no accessibility violation on the form or its error state.
// The relying party is a local server finishing the flow with openid-client.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as oidc from "openid-client";
import { chromium, type Browser, type Page } from "playwright-core";
import { createTestApp, type TestApp } from "./helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "./helpers/fixtures.ts";
import { serveApp, type ServedApp } from "./helpers/oidc.ts";

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
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

let t: TestApp;
let served: ServedApp;
let rp: ReturnType<typeof Bun.serve>;
let browser: Browser;
let config: oidc.Configuration;
const pending = new Map<string, { verifier: string; nonce: string }>();

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `chromium is missing at ${CHROMIUM}: apt-get install -y chromium (.ci/run does), or set CHROMIUM_PATH`,
    );
  t = await createTestApp("pglite");
  served = serveApp(t);
  const tenant = await createTenantRow(t.app);
  const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
  await createUserRow(t.app, { tenantUuid: tenant, username: "erin", password: "erin-secret" });
  // The relying party: its callback finishes the flow as a real application would.
  rp = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (req) => {
      const url = new URL(req.url);
      const state = url.searchParams.get("state") ?? "";
      const flow = pending.get(state);
      if (!flow) return new Response("unknown state", { status: 400 });
      try {
        const tokens = await oidc.authorizationCodeGrant(config, url, {
          pkceCodeVerifier: flow.verifier,
          expectedState: state,
          expectedNonce: flow.nonce,
        });
        return new Response(
          `<!doctype html><html lang="en"><title>RP</title><main><h1 id="who">${tokens.claims()!.preferred_username}</h1></main></html>`,
          { headers: { "Content-Type": "text/html" } },
        );
      } catch (e) {
        return new Response(`exchange failed: ${(e as Error).message}`, { status: 500 });
      }
    },
  });
  const redirect = `http://127.0.0.1:${rp.port}/cb`;
  const client = (
    await t.request("POST", "/0.1/oidc/clients", {
      token: admin,
      body: { name: "Browser RP", client_type: "confidential", redirect_uris: [redirect] },
    })
  ).json;
  config = await oidc.discovery(
    new URL(`${served.url}/0.1/oidc`),
    client.client_id,
    undefined,
    oidc.ClientSecretBasic(client.client_secret),
    { execute: [oidc.allowInsecureRequests] },
  );
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  rp?.stop(true);
  await served?.stop();
  await t?.close();
});

async function authorizationUrl(): Promise<string> {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  pending.set(state, { verifier, nonce });
  return oidc
    .buildAuthorizationUrl(config, {
      redirect_uri: `http://127.0.0.1:${rp.port}/cb`,
      scope: "openid profile",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      nonce,
    })
    .toString();
}

/** With SCREENSHOT_DIR set, the page as a person sees it is kept there (a test artifact). */
async function keepScreenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.SCREENSHOT_DIR;
  if (dir) await page.screenshot({ path: `${dir}/${name}.png`, fullPage: true });
}

async function axeViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's CSP (no script) does not apply to it.
  await page.evaluate(AXE_SOURCE);
  const result = (await page.evaluate(
    "axe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21aa', 'best-practice'] })",
  )) as { violations: Array<{ id: string; nodes: unknown[] }> };
  return result.violations.map((v) => `${v.id} (${v.nodes.length})`);
}

describe("the hosted login page in Chromium", () => {
  test("signs in with JavaScript off: wrong password first (generic message), then the right one; the relying party gets the user", async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const cspViolations: string[] = [];
    page.on("console", (m) => m.text().includes("Content Security Policy") && cspViolations.push(m.text()));
    const res = await page.goto(await authorizationUrl());
    expect(res?.status()).toBe(200);
    expect(await page.title()).toBe("Sign in to Browser RP");
    // Focus order: username (focused on arrival), password, the button.
    expect(await page.evaluate("document.activeElement.id")).toBe("username");
    const order: string[] = [];
    for (let i = 0; i < 2; i++) {
      await page.keyboard.press("Tab");
      order.push(await page.evaluate("document.activeElement.id || document.activeElement.tagName"));
    }
    expect(order).toEqual(["password", "BUTTON"]);
    await keepScreenshot(page, "oidc-login-form");
    await page.fill("#username", "erin");
    await page.fill("#password", "wrong");
    await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
    expect(await page.textContent("[role=alert]")).toBe("Wrong username or password.");
    expect(await page.inputValue("#username")).toBe("erin");
    await keepScreenshot(page, "oidc-login-error");
    await page.fill("#password", "erin-secret");
    await Promise.all([page.waitForURL(`http://127.0.0.1:${rp.port}/cb**`), page.click("button[type=submit]")]);
    expect(await page.textContent("#who")).toBe("erin");
    expect(cspViolations).toEqual([]);
    await context.close();
  });

  test("axe-core: no violation on the form, its error state, or the error page", async () => {
    const page = await browser.newPage();
    await page.goto(await authorizationUrl());
    expect(await axeViolations(page)).toEqual([]);
    await page.fill("#username", "erin");
    await page.fill("#password", "wrong");
    await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
    expect(await page.isVisible("[role=alert]")).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await page.goto(`${served.url}/0.1/oidc/authorize?client_id=${crypto.randomUUID()}`);
    expect(await page.textContent("h1")).toBe("This sign-in cannot continue");
    expect(await axeViolations(page)).toEqual([]);
    await page.close();
  });

  test("the page cannot be framed", async () => {
    const page = await browser.newPage();
    const url = await authorizationUrl();
    await page.route("http://frame.test/", (route) =>
      route.fulfill({ contentType: "text/html", body: `<!doctype html><iframe src="${url}"></iframe>` }),
    );
    await page.goto("http://frame.test/");
    await page.waitForTimeout(500);
    const frame = page.frames().find((f) => f !== page.mainFrame());
    const framedText = frame
      ? await frame.evaluate("document.body ? document.body.innerText : ''").catch(() => "")
      : "";
    expect(String(framedText)).not.toContain("Sign in to");
    await page.close();
  });
});
