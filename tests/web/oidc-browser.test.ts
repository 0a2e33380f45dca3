// The hosted login page in a real browser (Debian's chromium, driven by playwright-core): a user
// signs in with JavaScript off, the page's CSP lets its form redirect to the registered client and
// nothing else, and axe-core finds no accessibility violation on the form or its error state.
// The relying party is a local server finishing the flow with openid-client.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as oidc from "openid-client";
import type { Browser } from "playwright-core";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";
import { axeViolations, keepScreenshot, launchChromium } from "../helpers/browser.ts";

let t: TestApp;
let served: ServedApp;
let rp: ReturnType<typeof Bun.serve>;
let browser: Browser;
let config: oidc.Configuration;
let partnerConfig: oidc.Configuration;
const pending = new Map<string, { verifier: string; nonce: string; config: oidc.Configuration }>();
let lastIdToken = "";

beforeAll(async () => {
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
      if (url.pathname === "/signed-out")
        return new Response(
          `<!doctype html><html lang="en"><title>RP</title><main><h1 id="bye">signed out ${state.replace(/\W/g, "")}</h1></main></html>`,
          { headers: { "Content-Type": "text/html" } },
        );
      const flow = pending.get(state);
      if (!flow) return new Response("unknown state", { status: 400 });
      try {
        const tokens = await oidc.authorizationCodeGrant(flow.config, url, {
          pkceCodeVerifier: flow.verifier,
          expectedState: state,
          expectedNonce: flow.nonce,
        });
        lastIdToken = tokens.id_token!;
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
      body: { name: "Browser RP", client_type: "confidential", redirect_uris: [redirect], first_party: true },
    })
  ).json;
  config = await oidc.discovery(
    new URL(`${served.url}/0.1/oidc`),
    client.client_id,
    undefined,
    oidc.ClientSecretBasic(client.client_secret),
    { execute: [oidc.allowInsecureRequests] },
  );
  // A third-party client: the consent screen; and its registered post-logout page.
  const partner = (
    await t.request("POST", "/0.1/oidc/clients", {
      token: admin,
      body: {
        name: "Partner Portal",
        client_type: "confidential",
        redirect_uris: [redirect],
        post_logout_redirect_uris: [`http://127.0.0.1:${rp.port}/signed-out`],
      },
    })
  ).json;
  partnerConfig = await oidc.discovery(
    new URL(`${served.url}/0.1/oidc`),
    partner.client_id,
    undefined,
    oidc.ClientSecretBasic(partner.client_secret),
    { execute: [oidc.allowInsecureRequests] },
  );
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  rp?.stop(true);
  await served?.stop();
  await t?.close();
});

async function authorizationUrl(rpConfig = config, scope = "openid profile"): Promise<string> {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  pending.set(state, { verifier, nonce, config: rpConfig });
  return oidc
    .buildAuthorizationUrl(rpConfig, {
      redirect_uri: `http://127.0.0.1:${rp.port}/cb`,
      scope,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      nonce,
    })
    .toString();
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

  test("consent and logout pages: axe-core finds nothing; allow signs in, logout asks, then signs out", async () => {
    // JavaScript on only so that axe-core can run (evaluate needs it); the pages carry no script.
    const context = await browser.newContext();
    const page = await context.newPage();
    const cspViolations: string[] = [];
    page.on("console", (m) => m.text().includes("Content Security Policy") && cspViolations.push(m.text()));
    await page.goto(await authorizationUrl(partnerConfig, "openid profile email offline_access"));
    await page.fill("#username", "erin");
    await page.fill("#password", "erin-secret");
    await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
    expect(await page.title()).toBe("Allow Partner Portal to access your account?");
    expect(await page.locator("ul.scopes li").allTextContents()).toEqual([
      "Know who you are (your account identifier and organisation)",
      "See your name and username",
      "See your email address",
      "Stay connected to your account when you are not using it",
    ]);
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "oidc-consent");
    await Promise.all([page.waitForURL(`http://127.0.0.1:${rp.port}/cb**`), page.click("button[value=allow]")]);
    expect(await page.textContent("#who")).toBe("erin");
    // Single sign-on: the first-party client goes straight through.
    await page.goto(await authorizationUrl());
    expect(await page.textContent("#who")).toBe("erin");
    // Logout without id_token_hint: the confirmation page.
    await page.goto(`${served.url}/0.1/oidc/logout`);
    expect(await page.title()).toBe("Sign out?");
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "oidc-logout-confirm");
    await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
    expect(await page.textContent("h1")).toBe("You are signed out");
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "oidc-signed-out");
    // Signed out: the form again (the consent given before is remembered).
    await page.goto(await authorizationUrl(partnerConfig, "openid profile email offline_access"));
    expect(await page.isVisible("#password")).toBe(true);
    await page.fill("#username", "erin");
    await page.fill("#password", "erin-secret");
    await Promise.all([page.waitForURL(`http://127.0.0.1:${rp.port}/cb**`), page.click("button[type=submit]")]);
    // RP-initiated logout with id_token_hint: straight back to the registered page with state.
    const end = oidc.buildEndSessionUrl(partnerConfig, {
      id_token_hint: lastIdToken,
      post_logout_redirect_uri: `http://127.0.0.1:${rp.port}/signed-out`,
      state: "st8",
    });
    await page.goto(end.toString());
    expect(await page.textContent("#bye")).toBe("signed out st8");
    expect(cspViolations).toEqual([]);
    await context.close();
  }, 60_000);

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
