// Debian's Chromium driven by playwright-core, for the tests of pages (the login page, the
// console): launch flags, axe-core, screenshots kept as artifacts when SCREENSHOT_DIR is set, and a
// relying party (a local server finishing the code flow with openid-client, as a real application
// would) whose callback page shows who signed in and how.
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as oidc from "openid-client";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import type { TestApp } from "./app.ts";
import { discoverClient, startAuthorization } from "./oidc.ts";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
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

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `chromium is missing at ${CHROMIUM}: apt-get install -y chromium (.ci/run does), or set CHROMIUM_PATH`,
    );
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
}

/** With SCREENSHOT_DIR set, the page as a person sees it is kept there (a test artifact). */
export async function keepScreenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.SCREENSHOT_DIR;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: `${dir}/${name}.png`, fullPage: true });
}

/**
 * The console of the service at `baseUrl`, signed in as `username` (password `{username}-secret`)
 * without the login page: a token from POST /0.1/token, put where the console keeps it before its
 * script runs. Fast, for the paths that are not about signing in. The page is not opened yet, so a
 * caller can listen to it first (`open(hash)`).
 */
export async function consoleAs(
  browser: Browser,
  baseUrl: string,
  username: string,
  opts: { viewport?: { width: number; height: number }; timeout?: number } = {},
): Promise<{ context: BrowserContext; page: Page; open: (hash: string) => Promise<unknown> }> {
  const res = await fetch(`${baseUrl}/0.1/token`, {
    method: "POST",
    headers: { Authorization: `Basic ${btoa(`${username}:${username}-secret`)}`, "Content-Type": "application/json" },
    body: "{}",
  });
  if (res.status !== 200) throw new Error(`${username} could not log in: ${res.status}`);
  const token = ((await res.json()) as { data: { token: string } }).data.token;
  const context = await browser.newContext({ viewport: opts.viewport ?? { width: 1280, height: 900 } });
  context.setDefaultTimeout(opts.timeout ?? 25_000);
  await context.addInitScript(
    `sessionStorage.setItem("tessera-console.token", ${JSON.stringify(JSON.stringify({ token, expiresAt: Date.now() + 3_600_000 }))})`,
  );
  const page = await context.newPage();
  return { context, page, open: (hash) => page.goto(`${baseUrl}/0.1/console/${hash}`) };
}

export interface AxeViolation {
  id: string;
  impact: string;
  nodes: Array<{ target: string[] }>;
}

/** axe-core's WCAG 2.1 AA and best-practice violations, as `id (count)` strings. */
export async function axeViolations(page: Page, minImpact: "minor" | "serious" = "minor"): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's CSP does not apply to it.
  await page.evaluate(AXE_SOURCE);
  const result = (await page.evaluate(
    "axe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21aa', 'best-practice'] })",
  )) as { violations: AxeViolation[] };
  const counted = minImpact === "serious" ? ["serious", "critical"] : ["minor", "moderate", "serious", "critical"];
  return result.violations
    .filter((v) => counted.includes(v.impact))
    .map((v) => `${v.id} (${v.nodes.length}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")})`);
}

export interface RelyingParty {
  port: number;
  redirectUri: string;
  /** A fresh authorization URL (PKCE, state, nonce), with `extra` parameters (`prompt`, `max_age`). */
  authorizationUrl(extra?: Record<string, string>): Promise<string>;
  stop(): void;
}

/**
 * Registers a confidential client in the caller's tenant and serves its callback: the code is
 * exchanged with openid-client; the page shows `preferred_username` (#who) and the ID token's
 * `amr` (#amr, space-separated).
 */
export async function startRelyingParty(t: TestApp, providerUrl: string, adminToken: string): Promise<RelyingParty> {
  const pending = new Map<string, { verifier: string; nonce: string }>();
  let config: oidc.Configuration | undefined;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (req) => {
      const url = new URL(req.url);
      const state = url.searchParams.get("state") ?? "";
      const flow = pending.get(state);
      if (!flow || !config) return new Response("unknown state", { status: 400 });
      try {
        const tokens = await oidc.authorizationCodeGrant(config, url, {
          pkceCodeVerifier: flow.verifier,
          expectedState: state,
          expectedNonce: flow.nonce,
        });
        const claims = tokens.claims()!;
        return new Response(
          `<!doctype html><html lang="en"><title>RP</title><main><h1 id="who">${claims.preferred_username}</h1><p id="amr">${((claims.amr as string[]) ?? []).join(" ")}</p></main></html>`,
          { headers: { "Content-Type": "text/html" } },
        );
      } catch (e) {
        return new Response(`exchange failed: ${(e as Error).message}`, { status: 500 });
      }
    },
  });
  const redirectUri = `http://127.0.0.1:${server.port}/cb`;
  const client = (
    await t.request("POST", "/0.1/oidc/clients", {
      token: adminToken,
      body: { name: "Browser RP", client_type: "confidential", redirect_uris: [redirectUri], first_party: true },
    })
  ).json;
  config = await discoverClient(new URL(`${providerUrl}/0.1/oidc`), client);
  return {
    port: server.port as number,
    redirectUri,
    async authorizationUrl(extra = {}) {
      const started = await startAuthorization(config!, redirectUri, extra);
      pending.set(started.state, started);
      return started.url;
    },
    stop: () => server.stop(true),
  };
}
