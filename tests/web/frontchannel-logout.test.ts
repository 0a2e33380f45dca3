// OpenID Connect Front-Channel Logout 1.0 in a real browser (Debian's chromium, playwright-core): after
// an RP-initiated logout, the signed-out page frames the logout page of every client the browser
// session gave tokens to — with `iss` and `sid` for a client that needs them (§2, §3) — with
// JavaScript off, under a CSP whose frame-src names exactly those origins; a post-logout redirect
// becomes a link (no script waits for the frames); axe-core finds nothing on the page.
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as oidc from "openid-client";
import type { Browser, BrowserContext } from "playwright-core";
import { databaseKinds, createTestApp, type TestApp } from "../helpers/app.ts";
import { axeViolations, keepScreenshot, launchChromium } from "../helpers/browser.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { discoverClient, serveApp, startAuthorization, TestBrowser, type ServedApp } from "../helpers/oidc.ts";
import { until } from "../helpers/wait.ts";

/** A relying party's front-channel logout page: records each load (its query), answers a page. */
function relyingParty() {
  const loads: URL[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const url = new URL(req.url);
      if (url.pathname.startsWith("/fc")) loads.push(url);
      return new Response('<!doctype html><html lang="en"><title>RP</title><main><p>bye</p></main></html>', {
        headers: { "Content-Type": "text/html" },
      });
    },
  });
  return { server, loads, origin: `http://127.0.0.1:${server.port}` };
}

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

for (const kind of databaseKinds()) {
  let t: TestApp;
  let served: ServedApp;
  let issuer: string;
  let tenant: string;
  const withSid = relyingParty();
  const plain = relyingParty();
  const other = relyingParty();
  const clients: Record<string, { client_id: string; client_secret: string; config: oidc.Configuration }> = {};
  let n = 0;

  beforeAll(async () => {
    t = await createTestApp(kind, {
      config: { outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true } },
    });
    served = serveApp(t);
    issuer = `${served.url}/0.1/oidc`;
    tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    const register = async (name: string, rp: ReturnType<typeof relyingParty>, extra: Record<string, unknown>) => {
      const r = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: {
          name,
          client_type: "confidential",
          redirect_uris: [`${rp.origin}/cb`],
          post_logout_redirect_uris: [`${rp.origin}/signed-out`],
          first_party: true,
          ...extra,
        },
      });
      if (r.status !== 201) throw new Error(r.text);
      clients[name] = { ...r.json, config: await discoverClient(new URL(issuer), r.json) };
    };
    await register("Grafana", withSid, {
      frontchannel_logout_uri: `${withSid.origin}/fc?app=grafana`,
      frontchannel_logout_session_required: true,
    });
    await register("Wiki", plain, { frontchannel_logout_uri: `${plain.origin}/fc` });
    await register("Never signed in", other, { frontchannel_logout_uri: `${other.origin}/fc` });
  }, 60_000);
  afterAll(async () => {
    served?.stop();
    for (const rp of [withSid, plain, other]) rp.server.stop(true);
    await t?.close();
  });

  /** A user signed in to Grafana then Wiki (single sign-on) without JavaScript; the browser session's cookie. */
  async function signedIn() {
    const username = `fc${++n}`;
    await createUserRow(t.app, { tenantUuid: tenant, username, password: "pw-secret" });
    const nojs = new TestBrowser(served.url);
    const idTokens: string[] = [];
    for (const name of ["Grafana", "Wiki"]) {
      const c = clients[name]!;
      const flow = await startAuthorization(c.config, redirectOf(name));
      const back = idTokens.length
        ? (await nojs.get(flow.url)).location!
        : (await nojs.signIn(flow.url, username, "pw-secret")).location!;
      const tokens = await oidc.authorizationCodeGrant(c.config, back, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
      });
      idTokens.push(tokens.id_token!);
    }
    const cookie = nojs.cookie
      .split("; ")
      .map((p) => p.split("="))
      .find(([k]) => k === "tessera_oidc_session")!;
    return { cookie: cookie[1]!, idTokens };
  }

  const redirectOf = (name: string) => `${(name === "Grafana" ? withSid : plain).origin}/cb`;
  const sidOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split(".")[1]!, "base64url").toString()).sid as string;

  async function contextWith(cookie: string, javaScriptEnabled: boolean): Promise<BrowserContext> {
    const context = await browser.newContext({ javaScriptEnabled });
    context.setDefaultTimeout(20_000);
    await context.addCookies([
      { name: "tessera_oidc_session", value: cookie, domain: "127.0.0.1", path: "/0.1/oidc", httpOnly: true },
    ]);
    return context;
  }

  test(`[${kind}] the signed-out page frames each client's logout page (iss and sid where required), JavaScript off, under an exact frame-src`, async () => {
    const { cookie, idTokens } = await signedIn();
    const sid = sidOf(idTokens[0]!);
    const before = { withSid: withSid.loads.length, plain: plain.loads.length, other: other.loads.length };
    const context = await contextWith(cookie, false);
    const page = await context.newPage();
    const logoutUrl = oidc.buildEndSessionUrl(clients.Grafana!.config, { id_token_hint: idTokens[0]! });
    const res = await page.goto(logoutUrl.toString());
    expect(res!.status()).toBe(200);
    expect(await page.locator("h1").textContent()).toBe("You are signed out");
    const csp = res!.headers()["content-security-policy"]!;
    const frameSrc = csp
      .split(";")
      .find((d) => d.trim().startsWith("frame-src"))!
      .trim()
      .split(/\s+/)
      .slice(1);
    expect(frameSrc.sort()).toEqual([withSid.origin, plain.origin].sort());
    expect(csp).not.toContain("script-src");
    expect(csp).toContain("frame-ancestors 'none'");
    // Both frames loaded, with JavaScript off.
    await until(() => withSid.loads.length > before.withSid && plain.loads.length > before.plain, 10_000);
    const grafanaLoad = withSid.loads.at(-1)!;
    expect(grafanaLoad.searchParams.get("app")).toBe("grafana"); // its own query kept
    expect(grafanaLoad.searchParams.get("iss")).toBe(issuer);
    expect(grafanaLoad.searchParams.get("sid")).toBe(sid);
    const wikiLoad = plain.loads.at(-1)!;
    expect(wikiLoad.searchParams.has("iss")).toBe(false); // not required: nothing added
    expect(wikiLoad.searchParams.has("sid")).toBe(false);
    expect(other.loads.length).toBe(before.other); // never signed in there
    expect(await page.locator("iframe").count()).toBe(2);
    await context.close();
  });

  test(`[${kind}] with a post-logout redirect: the frames, then a link back to the client with state; axe-core finds nothing`, async () => {
    const { cookie, idTokens } = await signedIn();
    const context = await contextWith(cookie, true);
    const page = await context.newPage();
    const logoutUrl = oidc.buildEndSessionUrl(clients.Wiki!.config, {
      id_token_hint: idTokens[1]!,
      post_logout_redirect_uri: `${plain.origin}/signed-out`,
      state: "s1",
    });
    const res = await page.goto(logoutUrl.toString());
    expect(res!.status()).toBe(200);
    const link = page.getByRole("link", { name: "Continue to Wiki" });
    expect(await link.getAttribute("href")).toBe(`${plain.origin}/signed-out?state=s1`);
    expect(await page.locator("iframe").first().getAttribute("title")).toStartWith("Signing out of ");
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "oidc-frontchannel-signed-out");
    await link.click();
    await page.waitForURL(`${plain.origin}/signed-out?state=s1`);
    await context.close();
  });

  test(`[${kind}] a logout with no front-channel client redirects at once, as before`, async () => {
    const { idTokens } = await signedIn();
    const nojs = new TestBrowser(served.url);
    // Another browser, with the hint: the named browser session ends; its clients are framed there.
    const r = await nojs.get(
      oidc
        .buildEndSessionUrl(clients.Wiki!.config, {
          id_token_hint: idTokens[1]!,
          post_logout_redirect_uri: `${plain.origin}/signed-out`,
        })
        .toString(),
    );
    expect(r.res.status).toBe(200);
    expect(r.html).toContain("<iframe");
    // The same again: the browser session is gone, nothing to frame: straight back.
    const again = await nojs.get(
      oidc
        .buildEndSessionUrl(clients.Wiki!.config, {
          id_token_hint: idTokens[1]!,
          post_logout_redirect_uri: `${plain.origin}/signed-out`,
        })
        .toString(),
    );
    expect(again.res.status).toBe(303);
    expect(again.location!.href).toBe(`${plain.origin}/signed-out`);
  });
}
