// The page shown on return from an upstream provider whose verified email is an existing account's
// (issue 40 item 3), in Chromium with axe-core: the account's password links it (a wrong one links
// nothing and counts as a failed login), its second factor is asked too when it has one, and only then
// is the link made and the application signed in. The provider provisions (`create`): an email that
// matches an existing account still asks for that account's password rather than making a second user.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { Browser } from "playwright-core";
import { emails, upstreamOidcLinks, users } from "../../src/db/schema.ts";
import { currentCode } from "../../src/services/auth/totp.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { axeViolations, launchChromium, type RelyingParty, startRelyingParty } from "../helpers/browser.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";
import { addUpstreamProvider, startUpstreamOidc, type UpstreamOidc } from "../helpers/upstream-oidc.ts";

let t: TestApp;
let served: ServedApp;
let browser: Browser;
let upstream: UpstreamOidc;
let rp: RelyingParty;
let tenant: string;
let provider: string;

/** A user of the tenant with a password and a confirmed address, as an administrator makes one. */
async function existing(username: string, address: string): Promise<string> {
  const uuid = await createUserRow(t.app, { tenantUuid: tenant, username, password: `${username}-pw` });
  await t.app.db.insert(emails).values({ address, confirmed: true, main: true, userUuid: uuid });
  return uuid;
}

const linksOf = (uuid: string) => t.app.db.select().from(upstreamOidcLinks).where(eq(upstreamOidcLinks.userUuid, uuid));

beforeAll(async () => {
  t = await createTestApp("pglite", {
    config: {
      outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true },
      mfa: { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 9).toString("base64") }] },
    },
  });
  served = serveApp(t);
  browser = await launchChromium();
  upstream = await startUpstreamOidc({
    accounts: {
      frank: { preferred_username: "frank.up", email: "frank@corp.example", email_verified: true },
      gina: { preferred_username: "gina.up", email: "gina@corp.example", email_verified: true },
    },
  });
  tenant = await createTenantRow(t.app);
  const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
  rp = await startRelyingParty(t, served.url, admin);
  provider = (
    await addUpstreamProvider(served.url, admin, upstream, {
      name: "corp",
      display_name: "Corp SSO",
      issuer: upstream.issuer,
      provisioning: "create",
    })
  ).uuid;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  rp?.stop();
  served?.stop();
  await upstream?.stop();
  await t?.close();
});

/** The application's login page, the provider's button, and back: the page shown on return. */
async function backFromUpstream(account: string) {
  await upstream.set({ account, tamper: null });
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(await rp.authorizationUrl({ scope: "openid profile" }));
  await Promise.all([
    page.waitForURL("**/upstream-sign-in"),
    page.getByRole("link", { name: "Continue with Corp SSO" }).click(),
  ]);
  return { context, page };
}

describe("linking an existing account on return from the upstream, in Chromium", () => {
  test("its password asked (axe: no violation); a wrong one links nothing; the right one links and signs in", async () => {
    const frank = await existing("frank", "frank@corp.example");
    const { context, page } = await backFromUpstream("frank");
    expect(await page.textContent("h1")).toBe("Link your account");
    expect(await page.textContent("main, body")).toContain("Type its password to link it to Corp SSO");
    expect(await page.inputValue("#username")).toBe("frank");
    expect(await page.getAttribute("#username", "readonly")).not.toBeNull();
    expect(await axeViolations(page)).toEqual([]);

    const [wrong] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === "POST"),
      page.fill("#password", "not-frank's").then(() => page.click("button[type=submit]")),
    ]);
    expect(wrong.status()).toBe(401);
    expect(await page.textContent("[role=alert]")).toBeTruthy();
    expect(await axeViolations(page)).toEqual([]);
    expect(await linksOf(frank)).toEqual([]);
    // Nothing changed on the account either.
    const [row] = await t.app.db.select().from(users).where(eq(users.uuid, frank));
    expect(row!.authenticationMethod).not.toBe("oidc");

    await page.fill("#password", "frank-pw");
    await Promise.all([page.waitForURL(`http://127.0.0.1:${rp.port}/**`), page.click("button[type=submit]")]);
    expect(await page.textContent("#who")).toBe("frank");
    expect((await linksOf(frank)).map((l) => [l.providerUuid, l.subject])).toEqual([[provider, "frank"]]);
    const [after] = await t.app.db.select().from(users).where(eq(users.uuid, frank));
    expect(after!.authenticationMethod).toBe("oidc");
    // No second user was made for the matching email.
    expect(await t.app.db.select().from(users).where(eq(users.username, "frank.up"))).toEqual([]);
    await context.close();

    // From now on the provider alone signs frank in.
    await upstream.set({ account: "frank", tamper: null });
    const again = await browser.newContext();
    const next = await again.newPage();
    await next.goto(await rp.authorizationUrl({ scope: "openid profile" }));
    await Promise.all([
      next.waitForURL(`http://127.0.0.1:${rp.port}/**`),
      next.getByRole("link", { name: "Continue with Corp SSO" }).click(),
    ]);
    expect(await next.textContent("#who")).toBe("frank");
    await again.close();
  });

  test("an account with TOTP: its password, then its code (axe), and only then the link", async () => {
    const gina = await existing("gina", "gina@corp.example");
    const own = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: gina, tenantUuid: tenant })).token;
    const started = await t.request("POST", "/0.1/users/me/mfa/totp", { token: own });
    await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
      token: own,
      body: { code: currentCode(started.json.secret) },
    });
    const { context, page } = await backFromUpstream("gina");
    await page.fill("#password", "gina-pw");
    await Promise.all([page.waitForURL("**/upstream-sign-in"), page.click("button[type=submit]")]);
    expect(await page.textContent("h1")).toBe("Two-step verification");
    expect(await axeViolations(page)).toEqual([]);
    expect(await linksOf(gina)).toEqual([]);
    await page.fill("#code", currentCode(started.json.secret, Date.now() + 30_000));
    await Promise.all([page.waitForURL(`http://127.0.0.1:${rp.port}/**`), page.click("button[type=submit]")]);
    expect(await page.textContent("#who")).toBe("gina");
    expect((await page.textContent("#amr"))!.split(" ")).toContain("otp");
    expect((await linksOf(gina)).map((l) => l.subject)).toEqual(["gina"]);
    await context.close();
  });
});
