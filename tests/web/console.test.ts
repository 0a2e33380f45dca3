// The administration console in Chromium (docs/console.md): an administrator of tenant A signs in
// through the hosted login page and walks every screen's main path; every screen passes axe-core
// and is screenshotted (SCREENSHOT_DIR); an administrator of tenant B sees nothing of A; the page
// holds its strict CSP, works from the keyboard and at phone width. One service and one browser
// for the whole file.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { currentCode } from "../../src/services/auth/totp.ts";
import { consoleRedirectUri, syncConsoleClient } from "../../src/services/console/client.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { axeViolations, consoleAs, keepScreenshot, launchChromium } from "../helpers/browser.ts";
import { adminToken, createTenantRow, createUserRow, policyHolder } from "../helpers/fixtures.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";
import { startTestIdp, type TestIdp } from "../helpers/saml-idp.ts";
import { closedPort, startSmtp, type TestSmtp } from "../helpers/smtp-server.ts";

let t: TestApp;
let served: ServedApp;
let browser: Browser;
let root: string;
let smtp: TestSmtp;
let idp: TestIdp;
const A: Record<string, string> = {};
const B: Record<string, string> = {};

beforeAll(async () => {
  smtp = await startSmtp();
  idp = await startTestIdp("console");
  // public_url is the served address itself: mailed links and the OIDC issuer point back here.
  const port = closedPort();
  t = await createTestApp(process.env.TEST_DATABASE_URL ? "postgres" : "pglite", {
    config: {
      public_url: `http://127.0.0.1:${port}`,
      smtp: { hostname: "127.0.0.1", port: smtp.port },
      mfa: { encryption_keys: [{ id: "console", key: Buffer.alloc(32, 3).toString("base64") }] },
    },
  });
  served = serveApp(t, port);
  await syncConsoleClient(t.app, [consoleRedirectUri(served.url)]);
  root = await adminToken(t.app);
  A.tenant = await createTenantRow(t.app, { name: "Acme" });
  A.child = await createTenantRow(t.app, { name: "Acme Lyon", parentUuid: A.tenant });
  A.admin = await policyHolder(t, A.tenant, "alice", ["auth.#"]);
  // Enough users for two pages of 25.
  for (let i = 0; i < 30; i++)
    await createUserRow(t.app, { tenantUuid: A.child, username: `acme-user-${String(i).padStart(2, "0")}` });
  A.someone = await createUserRow(t.app, { tenantUuid: A.tenant, username: "carol", password: "carol-secret" });
  A.nice = await createTenantRow(t.app, { name: "Acme Nice", parentUuid: A.tenant });
  // mover may move Acme Nice under Acme Lyon, and nothing else.
  await policyHolder(t, A.tenant, "mover", ["auth.tenants.read", `auth.tenants.${A.nice}.parent.${A.child}.update`]);
  const domains = await t.request("PUT", `/0.1/tenants/${A.tenant}`, {
    token: root,
    body: { name: "Acme", domain_names: ["acme.example.com"] },
  });
  expect(domains.status).toBe(204);
  // mia has a confirmed address (for the reset mail) and a confirmed authenticator app.
  A.mia = await createUserRow(t.app, { tenantUuid: A.tenant, username: "mia", password: "mia-secret" });
  const mail = await t.request("PUT", `/0.1/admin/users/${A.mia}/emails`, {
    token: root,
    body: { emails: [{ address: "mia@example.com", main: true, confirmed: true }] },
  });
  expect(mail.status).toBe(204);
  const totp = await t.request("POST", `/0.1/users/${A.mia}/mfa/totp`, { token: root });
  expect(totp.status).toBe(201);
  const confirmed = await t.request("POST", `/0.1/users/${A.mia}/mfa/totp/confirm`, {
    token: root,
    body: { code: currentCode(totp.json.secret, Date.now()) },
  });
  expect(confirmed.status).toBe(200);
  B.tenant = await createTenantRow(t.app, { name: "Globex" });
  B.admin = await policyHolder(t, B.tenant, "bob", ["auth.#"]);
  await policyHolder(t, t.app.topTenantUuid, "olga", ["auth.#"]);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await served?.stop();
  await t?.close();
  await idp?.stop();
  await smtp?.close();
});

/**
 * How long one step may wait for the page: generous, as CI runs four test files at once on two
 * cores. (Two CI failures of the SAML step, first blamed on load, were a page race: see that test.)
 */
const STEP_TIMEOUT = 25_000;

interface Session {
  context: BrowserContext;
  page: Page;
  cspViolations: string[];
}

async function signIn(username: string, viewport = { width: 1280, height: 900 }): Promise<Session> {
  const context = await browser.newContext({ viewport });
  context.setDefaultTimeout(STEP_TIMEOUT);
  const page = await context.newPage();
  const cspViolations: string[] = [];
  page.on("console", (m) => m.text().includes("Content Security Policy") && cspViolations.push(m.text()));
  await page.goto(`${served.url}/0.1/console/#/users`);
  await page.click("button:text-is('Sign in')");
  await page.waitForSelector("#username");
  await page.fill("#username", username);
  await page.fill("#password", `${username}-secret`);
  await Promise.all([page.waitForURL(/\/0\.1\/console\/#\/users$/), page.click("button[type=submit]")]);
  await page.waitForSelector("h1:text('Users')");
  // Reload: the token stays in sessionStorage (this tab), never localStorage.
  await page.reload();
  await page.waitForSelector("table tbody tr td a");
  return { context, page, cspViolations };
}

/**
 * A page signed in as `username` without the login page (already walked by signIn): a token from
 * POST /0.1/token, put where the console keeps it before its script runs. Fast, for the paths
 * that are not about signing in.
 */
async function openAs(username: string, hash: string, viewport = { width: 1280, height: 900 }): Promise<Session> {
  const { context, page, open } = await consoleAs(browser, served.url, username, { viewport, timeout: STEP_TIMEOUT });
  const cspViolations: string[] = [];
  page.on("console", (m) => m.text().includes("Content Security Policy") && cspViolations.push(m.text()));
  await open(hash);
  return { context, page, cspViolations };
}

async function visit(page: Page, hash: string, title: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  await page.waitForSelector(`h1:text-is(${JSON.stringify(title)})`);
  await page.waitForSelector(".busy", { state: "detached" });
}

async function checkScreen(page: Page, name: string): Promise<void> {
  expect({ screen: name, violations: await axeViolations(page) }).toEqual({ screen: name, violations: [] });
  await keepScreenshot(page, `console-${name}`);
}

const focusedLabel = (page: Page) => page.evaluate("document.activeElement.getAttribute('aria-label')");

/** Waits until the focus is on the element labelled `label` (polled: the page's CSP forbids waitForFunction's eval). */
async function focusOn(page: Page, label: string): Promise<void> {
  for (let i = 0; i < 100 && (await focusedLabel(page)) !== label; i++) await Bun.sleep(20);
  expect(await focusedLabel(page)).toBe(label);
}

async function confirmDialog(page: Page, action: string): Promise<void> {
  await page.waitForSelector("dialog[open]");
  await page.click(`dialog[open] button:text-is("${action}")`);
}

describe("the console in Chromium", () => {
  let alice: Session;

  test("the page: strict CSP, no inline script, only this origin; /0.1/console redirects to the page", async () => {
    const res = await fetch(`${served.url}/0.1/console/`);
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("unsafe-inline");
    const html = await res.text();
    expect(html).not.toMatch(/<script>|<script [^>]*>[^<]/);
    expect(html).not.toMatch(/https?:\/\//);
    const redirect = await fetch(`${served.url}/0.1/console`, { redirect: "manual" });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get("location")).toBe("console/");
    const js = await fetch(`${served.url}/0.1/console/app.js`, { headers: { "Accept-Encoding": "identity" } });
    expect(js.headers.get("content-type")).toContain("javascript");
    const size = (await js.text()).length;
    // Gzipped when the browser accepts it; asked again with its ETag, a 304 without a body.
    const zipped = await fetch(`${served.url}/0.1/console/app.js`, {
      headers: { "Accept-Encoding": "gzip" },
      decompress: false,
    } as RequestInit);
    expect(zipped.headers.get("content-encoding")).toBe("gzip");
    const zippedSize = (await zipped.arrayBuffer()).byteLength;
    expect(zippedSize).toBeLessThan(size / 2);
    console.log(`console app.js: ${size} bytes minified, ${zippedSize} gzipped`);
    const again = await fetch(`${served.url}/0.1/console/app.js`, {
      headers: { "If-None-Match": js.headers.get("etag")! },
    });
    expect([again.status, await again.text()]).toEqual([304, ""]);
    expect(again.headers.get("content-security-policy")).toBe(csp);
  });

  test("signs in through the login page (token in sessionStorage only) and loads fast", async () => {
    alice = await signIn("alice");
    const storage = (await alice.page.evaluate(
      "[Object.keys(localStorage), Object.keys(sessionStorage)]",
    )) as string[][];
    expect(storage[0]).toEqual([]);
    expect(storage[1]).toContain("tessera-console.token");
    // The header names the user (the uuid is in the title).
    const who = await alice.page.waitForSelector("header .user:text-is('alice')");
    expect(await who.getAttribute("title")).toBe(`User ${A.admin}`);
    // From navigation to the first list on screen, as the page itself measures it (User Timing mark),
    // over several loads: the median is what a person would notice.
    const runs: Array<{ firstList: number; requests: string }> = [];
    for (let i = 0; i < 7; i++) {
      await alice.page.reload();
      await alice.page.waitForSelector("table tbody tr td a");
      const timing = await alice.page.evaluate(() => ({
        firstList: performance.getEntriesByName("tessera-console:first-list")[0]!.startTime,
        requests: performance
          .getEntriesByType("resource")
          .map((r) => [r.name, r.startTime, (r as PerformanceResourceTiming).responseEnd] as const),
      }));
      runs.push({
        firstList: timing.firstList,
        requests: timing.requests
          .map(([name, start, end]) => {
            const path = new URL(name).pathname.replace(/^.*\/0\.1\//, "").replace(/[0-9a-f-]{36}/g, "{uuid}");
            return `${path} ${Math.round(start)}–${Math.round(end)}`;
          })
          .join(", "),
      });
    }
    const times = runs.map((r) => r.firstList).sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)]!;
    console.log(
      `console load, navigation to first list: median ${median.toFixed(0)} ms over ${times.length} loads ` +
        `(${times.map((x) => x.toFixed(0)).join(", ")}) (measured under load); requests of the last: ${runs.at(-1)!.requests}`,
    );
    expect(median).toBeLessThan(1000);
  }, 60_000);

  test("status: hidden from a tenant administrator, told the page is for the top tenant's administrators", async () => {
    await alice.page.evaluate(`location.hash = "#/status"`);
    await alice.page.waitForSelector("main [role=alert]:has-text('administrators of the top tenant')");
    expect(await alice.page.$$("nav.side a[href='#/status']")).toHaveLength(0);
  });

  test("tenants: the tree, create, rename, move, and a refused delete explained", async () => {
    const page = alice.page;
    await visit(page, "#/tenants", "Tenants");
    const tree = await page.textContent(".tree");
    expect(tree).toContain("Acme");
    expect(tree).toContain("Acme Lyon");
    expect(tree).not.toContain("Globex");
    await page.click("button[aria-label='Add a sub-tenant to Acme']");
    await page.fill("form[aria-label='Tenant change'] input[name=name]", "Acme Paris");
    await page.click("form[aria-label='Tenant change'] button[type=submit]");
    await page.waitForSelector(".tenant:has-text('Acme Paris')");
    await page.click("button[aria-label='Rename Acme Paris']");
    await page.fill("form[aria-label='Tenant change'] input[name=name]", "Acme Marseille");
    await page.click("form[aria-label='Tenant change'] button[type=submit]");
    await page.waitForSelector(".tenant:has-text('Acme Marseille')");
    await page.click("button[aria-label='Move Acme Marseille']");
    await page.selectOption("#move-target", { label: "Acme Lyon" });
    await page.click("form[aria-label='Tenant change'] button[type=submit]");
    await page.waitForSelector("[role=status]:has-text('Moved.')");
    await page.waitForSelector("li:has(> .tenant .name:text-is('Acme Lyon')) li .name:text-is('Acme Marseille')");
    // Acme Marseille is now below Acme Lyon: moving Lyon under it is refused, with the API's reason.
    await page.click("button[aria-label='Move Acme Lyon']");
    await page.selectOption("#move-target", { label: "Acme Marseille" });
    await page.click("form[aria-label='Tenant change'] button[type=submit]");
    await page.waitForSelector("[role=alert]:has-text('cannot be moved under itself or its descendants')");
    await page.click("form[aria-label='Tenant change'] button:text-is('Cancel')");
    await focusOn(page, "Move Acme Lyon");
    // Acme Lyon has users: the API refuses, and the console says why. From the keyboard: focus goes
    // into the dialog (on Cancel), Escape gives it back to the button; Tab, Enter confirms.
    const del = "button[aria-label='Delete Acme Lyon']";
    await page.focus(del);
    await page.keyboard.press("Enter");
    await page.waitForSelector("dialog[open]");
    expect(await page.evaluate("document.activeElement.closest('dialog') !== null")).toBe(true);
    expect(await page.evaluate("document.activeElement.textContent")).toBe("Cancel");
    await page.keyboard.press("Escape");
    await page.waitForSelector("dialog[open]", { state: "detached" });
    await focusOn(page, "Delete Acme Lyon");
    await page.keyboard.press("Enter");
    await page.waitForSelector("dialog[open]");
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement.textContent")).toBe("Delete");
    await page.keyboard.press("Enter");
    const error = await page.waitForSelector("[role=alert]");
    expect((await error.textContent())!.length).toBeGreaterThan(10);
    await focusOn(page, "Delete Acme Lyon");
    await checkScreen(page, "tenants");
  }, 30_000);

  test("tenants from the keyboard: a form takes the focus and gives it back; subtrees fold", async () => {
    const page = alice.page;
    await visit(page, "#/tenants", "Tenants");
    await page.focus("button[aria-label='Rename Acme Nice']");
    await page.keyboard.press("Enter");
    await page.waitForSelector("form[aria-label='Tenant change']");
    expect(await page.evaluate("document.activeElement.name")).toBe("name");
    await page.keyboard.press("Escape");
    await page.waitForSelector("form[aria-label='Tenant change']", { state: "detached" });
    await focusOn(page, "Rename Acme Nice");
    // A subtree folds and unfolds with its toggle (aria-expanded), keyboard first.
    const toggle = "button[aria-label='Sub-tenants of Acme Lyon']";
    expect(await page.getAttribute(toggle, "aria-expanded")).toBe("true");
    await page.focus(toggle);
    await page.keyboard.press("Space");
    expect(await page.getAttribute(toggle, "aria-expanded")).toBe("false");
    expect(await page.isVisible(".tenant .name:text-is('Acme Marseille')")).toBe(false);
    await page.keyboard.press("Enter");
    expect(await page.isVisible(".tenant .name:text-is('Acme Marseille')")).toBe(true);
  }, 30_000);

  test("tenants: Move is there for an ACL naming one parent; another parent is refused with the API's reason", async () => {
    const mover = await openAs("mover", "#/tenants");
    const page = mover.page;
    await page.waitForSelector("h1:text-is('Tenants')");
    await page.waitForSelector(".tenant .name:text-is('Acme Nice')");
    // Only Acme Nice may move (under Acme Lyon); nothing else may be renamed, moved or deleted.
    expect(await page.locator("button:text-is('Move')").count()).toBe(1);
    expect(await page.locator("button:text-is('Rename'), button:text-is('Delete')").count()).toBe(0);
    await page.click("button[aria-label='Move Acme Nice']");
    await page.selectOption("#move-target", { label: "Acme Marseille" });
    await page.click("form[aria-label='Tenant change'] button[type=submit]");
    const refusal = await page.waitForSelector("[role=alert]");
    expect(await refusal.textContent()).toContain(`does not include auth.tenants.${A.nice}.parent.`);
    await page.selectOption("#move-target", { label: "Acme Lyon" });
    await page.click("form[aria-label='Tenant change'] button[type=submit]");
    await page.waitForSelector("[role=status]:has-text('Moved.')");
    expect((await t.request("GET", `/0.1/tenants/${A.nice}`, { token: root })).json.parent_uuid).toBe(A.child);
    expect(mover.cspViolations).toEqual([]);
    await mover.context.close();
  }, 30_000);

  test("users: search, paging, create (errors field by field), then the user's page", async () => {
    const page = alice.page;
    await visit(page, "#/users", "Users");
    expect(await page.textContent(".pager")).toMatch(/1–25 of \d+/);
    // A slow page shows its progress: a status line and aria-busy, the rows already there kept.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route(/\/0\.1\/users\?.*offset=25/, async (route) => {
      await held;
      await route.continue();
    });
    await page.click(".pager button:text('Next')");
    await page.waitForSelector("section[aria-label=Users][aria-busy=true] .busy[role=status]:text('Loading…')");
    expect(await page.locator("tbody tr").count()).toBe(25);
    release();
    await page.waitForSelector(".pager span:text-matches('26–')");
    await page.waitForSelector("section[aria-label=Users][aria-busy=false]");
    await page.unrouteAll();
    await page.fill("input[type=search]", "acme-user-07");
    await page.click("form[role=search] button");
    await page.waitForSelector(".pager span:text('1–1 of 1')");
    await checkScreen(page, "users");
    await page.click("text=New user");
    await page.fill("form[aria-label='New user'] input[name=username]", "dave");
    await page.fill("form[aria-label='New user'] input[name=email_address]", "not an address");
    await page.click("form[aria-label='New user'] button[type=submit]");
    await page.waitForSelector("form[aria-label='New user'] [role=alert]");
    expect(await page.getAttribute("form[aria-label='New user'] input[name=email_address]", "aria-invalid")).toBe(
      "true",
    );
    await page.fill("form[aria-label='New user'] input[name=email_address]", "dave@example.com");
    await page.fill("form[aria-label='New user'] input[name=password]", "dave-secret");
    await page.click("form[aria-label='New user'] button[type=submit]");
    await page.waitForSelector("[role=status]:has-text('Created dave.')");
  }, 30_000);

  test("a user's page: edit, disable (confirmed), emails, groups, policies, sessions, MFA", async () => {
    const page = alice.page;
    // carol has a session to revoke.
    const login = await fetch(`${served.url}/0.1/token`, {
      method: "POST",
      headers: { Authorization: `Basic ${btoa("carol:carol-secret")}`, "Content-Type": "application/json" },
      body: "{}",
    });
    expect(login.status).toBe(200);
    await visit(page, `#/users/${A.someone}`, "User carol");
    await page.fill("form[aria-label='Profile'] input[name=firstname]", "Carol");
    await page.click("form[aria-label='Profile'] button[type=submit]");
    await page.waitForSelector("h1:text('User Carol')");
    await page.fill("input[name=emails]", "carol@example.com");
    await page.click("form:has(input[name=emails]) button[type=submit]");
    await page.waitForSelector("li:has-text('carol@example.com')");
    await page.selectOption("#add-policies", { label: "alice-admin" });
    await page.click("form:has(#add-policies) button[type=submit]");
    await page.waitForSelector("section[aria-labelledby=s-policies] a:text('alice-admin')");
    expect(await page.textContent("section[aria-labelledby=s-multi-factor-authentication]")).toContain(
      "Authenticator app",
    );
    await page.click("section[aria-labelledby=s-sessions] button:text('Revoke')");
    await confirmDialog(page, "Revoke");
    await page.waitForSelector("section[aria-labelledby=s-sessions] li:text('No session.')");
    await page.uncheck("form[aria-label='Profile'] input[name=enabled]");
    await page.click("form[aria-label='Profile'] button[type=submit]");
    await confirmDialog(page, "Disable");
    await page.waitForSelector("[role=status]:has-text('Saved.')");
    const user = await t.request("GET", `/0.1/users/${A.someone}`, { token: root });
    expect(user.json).toMatchObject({ firstname: "Carol", enabled: false });
    expect(user.json.emails.map((e: { address: string }) => e.address)).toEqual(["carol@example.com"]);
    await checkScreen(page, "user");
  }, 30_000);

  test("a user the directory manages (SCIM): the page says so, and saving asks first", async () => {
    const page = alice.page;
    const scimToken = await t.request("POST", "/0.1/scim/tokens", {
      token: root,
      tenant: A.tenant,
      body: { name: "Entra" },
    });
    const created = await t.request("POST", "/0.1/scim/v2/Users", {
      headers: { Authorization: `Bearer ${scimToken.json.token}` },
      body: { schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"], userName: "dora", externalId: "aad-42" },
    });
    expect(created.status).toBe(201);
    await visit(page, `#/users/${created.json.id}`, "User dora");
    await page.waitForSelector("section[aria-labelledby=s-profile] [role=status]:has-text('Managed by the tenant')");
    expect(await page.textContent("section[aria-labelledby=s-profile] [role=status]")).toContain("aad-42");
    await page.fill("form[aria-label='Profile'] input[name=firstname]", "Dora");
    await page.click("form[aria-label='Profile'] button[type=submit]");
    await confirmDialog(page, "Save anyway");
    await page.waitForSelector("h1:text('User Dora')");
  }, 30_000);

  test("groups: create, open, attach a policy", async () => {
    const page = alice.page;
    await visit(page, "#/groups", "Groups");
    await page.fill("form[aria-label='New group'] input[name=name]", "Support");
    await page.click("form[aria-label='New group'] button[type=submit]");
    await page.click("td a:text('Support')");
    await page.waitForSelector("h1:text('Group Support')");
    await page.selectOption("#attach-policy", { label: "alice-admin" });
    await page.click("form:has(#attach-policy) button[type=submit]");
    await page.waitForSelector("section[aria-labelledby=group-policies] a:text('alice-admin')");
    await checkScreen(page, "group");
    await visit(page, "#/groups", "Groups");
    await checkScreen(page, "groups");
  }, 30_000);

  test("a user's page: add to a group, the password reset mail (real SMTP), MFA status and reset", async () => {
    const page = alice.page;
    await visit(page, `#/users/${A.mia}`, "User mia");
    await page.selectOption("#add-groups", { label: "Support" });
    await page.click("form:has(#add-groups) button[type=submit]");
    await page.waitForSelector("section[aria-labelledby=s-groups] a:text('Support')");
    const groups = await t.request("GET", `/0.1/users/${A.mia}/groups`, { token: root });
    expect(groups.json.items.map((g: { name: string }) => g.name)).toContain("Support");
    await page.click("button:text('Send a password reset mail')");
    await page.waitForSelector("[role=status]:has-text('Password reset mail sent.')");
    const mail = await smtp.waitForMail((m) => m.to.includes("mia@example.com"));
    // the link leads to Tessera's own reset page under the service's public address (docs/configuration.md "Mails")
    expect(mail.text).toContain(`${new URL(served.url).origin}/0.1/pages/password-reset?token=`);
    expect(mail.text).toMatch(new RegExp(`token=[0-9a-f-]{36}&user_uuid=${A.mia}`));
    const mfa = "section[aria-labelledby=s-multi-factor-authentication]";
    expect(await page.textContent(mfa)).toContain("Authenticator app: active · recovery codes left: 10");
    await checkScreen(page, "user-mfa");
    await page.click(`${mfa} button:text('Reset MFA')`);
    await confirmDialog(page, "Reset");
    await page.waitForSelector(`${mfa} strong:text-is('none')`);
    expect(await page.isVisible(`${mfa} button:text('Reset MFA')`)).toBe(false);
    const status = await t.request("GET", `/0.1/users/${A.mia}/mfa`, { token: root });
    expect([status.json.totp.enrolled, status.json.recovery_codes_left]).toEqual([false, 0]);
  }, 30_000);

  test("policies: the ACL editor warns on # and marks what alice may not grant; the API's 403 names it", async () => {
    const page = alice.page;
    await visit(page, "#/policies", "Policies");
    await checkScreen(page, "policies");
    await page.fill("form[aria-label='New policy'] input[name=name]", "Operators");
    await page.click("form[aria-label='New policy'] button[type=submit]");
    await page.waitForSelector("h1:text('Policy Operators')");
    await page.fill("#acl-entry", "auth.users.read");
    await page.click("text=Add entry");
    await page.fill("#acl-entry", "confd.#");
    await page.waitForSelector(".acl-editor:has-text('You cannot grant confd.#')"); // rendered after the input event
    await page.click("text=Add entry");
    const row = await page.textContent(".acl li:has(code:text('confd.#'))");
    expect(row).toContain("you cannot grant this");
    expect(row).toContain("⚠");
    await checkScreen(page, "policy");
    await page.click("form[aria-label='Policy'] button[type=submit]");
    expect(await (await page.waitForSelector("form[aria-label='Policy'] [role=alert]")).textContent()).toContain(
      "confd.#",
    );
    await page.click("button[aria-label='Remove confd.#']");
    await page.click("form[aria-label='Policy'] button[type=submit]");
    await page.waitForSelector("form[aria-label='Policy'] [role=status]:has-text('Saved.')");
  }, 30_000);

  test("sessions across the tenant, revocable", async () => {
    const page = alice.page;
    await visit(page, "#/sessions", "Sessions");
    expect(await page.locator("tbody tr").count()).toBeGreaterThan(0);
    // Users are named (the uuid in the title), not shown as uuids.
    const alices = page.locator(`tbody a[title='User ${A.admin}']`);
    await page.waitForSelector(`tbody a[title='User ${A.admin}']:text-is('alice')`);
    expect(await alices.count()).toBeGreaterThan(0);
    await checkScreen(page, "sessions");
  }, 30_000);

  test("LDAP: a form the API checks field by field, then saved", async () => {
    const page = alice.page;
    await visit(page, "#/ldap", "LDAP");
    await page.fill("form[aria-label='LDAP configuration'] input[name=host]", "ldap.example.com");
    await page.fill("form[aria-label='LDAP configuration'] input[name=port]", "389");
    await page.fill("form[aria-label='LDAP configuration'] input[name=user_base_dn]", "ou=people,dc=example,dc=com");
    await page.fill("form[aria-label='LDAP configuration'] input[name=user_login_attribute]", "uid");
    await page.click("form[aria-label='LDAP configuration'] button[type=submit]");
    await page.waitForSelector("[aria-invalid=true]");
    await page.fill("form[aria-label='LDAP configuration'] input[name=user_email_attribute]", "mail");
    await page.click("form[aria-label='LDAP configuration'] button[type=submit]");
    const answer = await page.waitForSelector("form[aria-label='LDAP configuration'] :is([role=status], [role=alert])");
    expect(await answer.textContent()).toBe("Saved.");
    await checkScreen(page, "ldap");
  }, 30_000);

  test("SAML and OpenID Connect clients", async () => {
    const page = alice.page;
    await visit(page, "#/saml", "SAML");
    const form = "form[aria-label='SAML configuration']";
    expect(await page.textContent(form)).toContain("No identity provider is configured.");
    await page.selectOption("#saml-domain", { label: "acme.example.com" });
    await page.fill(`${form} input[name=entity_id]`, "https://acme.tessera.test/saml/sp");
    await page.fill(`${form} input[name=acs_url]`, "https://acme.tessera.test/0.1/saml/acs");
    // Without the IdP metadata the API refuses, field by field.
    await page.click(`${form} button[type=submit]`);
    await page.waitForSelector(`${form} [role=alert]`);
    await page.setInputFiles("#saml-metadata", {
      name: "idp-metadata.xml",
      mimeType: "application/xml",
      buffer: Buffer.from(idp.metadata()),
    });
    await page.click(`${form} button[type=submit]`);
    // The form shows the new configuration and still says it was saved (it once remounted and lost
    // the notice as soon as the configuration was read back: a race a loaded CI machine lost).
    await page.waitForSelector(`${form} p:text('An identity provider is configured.')`);
    expect(await page.textContent(`${form} [role=status]`)).toBe("Saved.");
    const saved = await t.request("GET", "/0.1/backends/saml", { token: root, tenant: A.tenant });
    expect(saved.json).toMatchObject({ entity_id: "https://acme.tessera.test/saml/sp" });
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.click(`${form} button:text('Download the SP metadata')`),
    ]);
    expect(download.suggestedFilename()).toBe("tessera-sp-metadata.xml");
    const xml = await Bun.file((await download.path())!).text();
    expect(xml).toContain("EntityDescriptor");
    expect(xml).toContain('entityID="https://acme.tessera.test/saml/sp"');
    expect(xml).toContain("https://acme.tessera.test/0.1/saml/acs");
    await checkScreen(page, "saml");
    await visit(page, "#/clients", "OpenID Connect clients");
    await page.click("text=New client");
    await page.fill("form[aria-label='New client'] input[name=name]", "Grafana");
    await page.fill("form[aria-label='New client'] textarea[name=redirect_uris]", "https://grafana.example.com/cb");
    await page.click("form[aria-label='New client'] button[type=submit]");
    await page.waitForSelector(".secret code.block");
    // The list reloads after the secret is shown: wait for the row (read at once, it was once empty).
    await page.waitForSelector("tbody td:has-text('Grafana')");
    // A development client on plain http: only with the box ticked (RFC 6749 §3.1.2.1), and the list says so.
    await page.click("text=New client");
    await page.fill("form[aria-label='New client'] input[name=name]", "Dev app");
    await page.fill("form[aria-label='New client'] textarea[name=redirect_uris]", "http://dev.example.com/cb");
    await page.check("form[aria-label='New client'] input[name=allow_insecure_redirects]");
    await page.click("form[aria-label='New client'] button[type=submit]");
    await page.waitForSelector("tbody tr:has-text('Dev app') :text('(plain http allowed)')");
    expect(await page.locator("tbody tr:has-text('Grafana') :text('(plain http allowed)')").count()).toBe(0);
    await checkScreen(page, "clients");
  }, 60_000);

  test("webhooks: create (the signing secret shown once), ping, a private URL refused", async () => {
    const page = alice.page;
    await visit(page, "#/webhooks", "Webhooks");
    const form = "form[aria-label='New webhook']";
    await page.click("text=New webhook");
    await page.fill(`${form} input[name=url]`, "http://169.254.169.254/latest");
    await page.fill(`${form} input[name=events]`, "auth_user_*");
    await page.click(`${form} button[type=submit]`);
    await page.waitForSelector(`${form} [role=alert]`);
    await page.fill(`${form} input[name=url]`, "https://hooks.example.com/tessera");
    await page.click(`${form} button[type=submit]`);
    await page.waitForSelector(".secret code.block:has-text('whsec_')");
    await page.waitForSelector("tbody td:has-text('hooks.example.com')");
    await page.click("button[aria-label='Ping https://hooks.example.com/tessera']");
    await page.waitForSelector("[role=status]:has-text('Test event queued.')");
    await checkScreen(page, "webhooks");
  }, 60_000);

  test("audit trail: what alice did in the console is there; filters by action, actor, target, outcome, time; paging", async () => {
    const page = alice.page;
    await visit(page, "#/audit", "Audit trail");
    const entries = "section[aria-label='Audit entries']";
    await page.waitForSelector(`${entries} tbody tr td code`);
    // Every console action of this file is in the trail: more than a page of it.
    expect(await page.textContent(`${entries} .pager`)).toMatch(/1–25 of \d+/);
    await page.click(`${entries} .pager button:text('Next')`);
    await page.waitForSelector(`${entries} .pager span:text-matches('26–')`);
    // carol's first name, changed on her page by alice.
    await page.fill("#audit-action", "user.*");
    await page.fill("#audit-actor_uuid", A.admin!);
    await page.fill("#audit-target_uuid", A.someone!);
    await page.fill("#audit-outcome", "success");
    const local = (ms: number) =>
      page.evaluate(
        `(() => { const d = new Date(${ms}); d.setMinutes(d.getMinutes() - d.getTimezoneOffset()); return d.toISOString().slice(0, 16); })()`,
      ) as Promise<string>;
    await page.fill("#audit-since", await local(Date.now() - 3_600_000));
    await page.click("button:text('Apply filters')");
    // The filtered list replaces the unfiltered page (which may hold the row below too): wait until
    // every row shown is of the filtered actions, then check them (CI once read the page before).
    await page.waitForFunction(
      (cells) => [...document.querySelectorAll(cells)].every((c) => c.textContent?.startsWith("user.")),
      `${entries} tbody tr td code`,
      { timeout: 10_000 },
    );
    // The actor by name, the change field by field.
    await page
      .locator(`${entries} tbody tr:has(code:text-is('user.update')):has(a:text-is('alice'))`)
      .filter({ hasText: 'firstname: null → "Carol"' })
      .waitFor();
    for (const action of await page.locator(`${entries} tbody tr td code`).allTextContents())
      expect(action).toStartWith("user.");
    await checkScreen(page, "audit");
    // A time range that ends before it all: nothing.
    await page.fill("#audit-since", "");
    await page.fill("#audit-until", await local(Date.now() - 3_600_000));
    await page.click("button:text('Apply filters')");
    await page.waitForSelector(`${entries} td:text('Nothing to show.')`);
    // A filter the API refuses is explained, field by field.
    await page.click("button:text('Clear')");
    await page.fill("#audit-actor_uuid", "not-a-uuid");
    await page.click("button:text('Apply filters')");
    expect(await (await page.waitForSelector(`${entries} [role=alert]`)).textContent()).toContain("actor_uuid");
  }, 30_000);

  test("keyboard: the skip link comes first and leads to the content; the menu is reachable", async () => {
    const page = alice.page;
    await visit(page, "#/users", "Users");
    // The skip link is the first thing a Tab reaches on the page; Enter moves focus to the content.
    expect(await page.evaluate("document.querySelector('a, button, input, select, textarea').className")).toBe("skip");
    await page.focus("a.skip");
    await page.keyboard.press("Enter");
    expect(await page.evaluate("document.activeElement.id")).toBe("main");
    const names: string[] = [];
    await page.focus("nav.side a");
    for (let i = 0; i < 3; i++) {
      names.push(String(await page.evaluate("document.activeElement.textContent")));
      await page.keyboard.press("Tab");
    }
    expect(names).toEqual(["Tenants", "Users", "Groups"]); // Status is the top tenant's
    expect(alice.cspViolations).toEqual([]);
  }, 30_000);

  test("phone width (375 px): every screen without sideways scrolling, the menu opens", async () => {
    const uuidOf = async (path: string, name: string) =>
      (await t.request("GET", `${path}?search=${name}&recurse=true`, { token: root, tenant: A.tenant })).json.items[0]
        .uuid as string;
    const phone = await openAs("alice", "#/users", { width: 375, height: 740 });
    const page = phone.page;
    await page.waitForSelector("tbody tr td a");
    await page.click(".menu-toggle");
    expect(await page.isVisible("nav.side a:text('Tenants')")).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "console-phone-menu");
    await page.click(".menu-toggle");
    const screens: Array<[string, string, string]> = [
      ["users", "#/users", "Users"],
      ["user", `#/users/${A.mia}`, "User mia"],
      ["tenants", "#/tenants", "Tenants"],
      ["groups", "#/groups", "Groups"],
      ["group", `#/groups/${await uuidOf("/0.1/groups", "Support")}`, "Group Support"],
      ["policies", "#/policies", "Policies"],
      ["policy", `#/policies/${await uuidOf("/0.1/policies", "Operators")}`, "Policy Operators"],
      ["sessions", "#/sessions", "Sessions"],
      ["ldap", "#/ldap", "LDAP"],
      ["saml", "#/saml", "SAML"],
      ["clients", "#/clients", "OpenID Connect clients"],
      ["audit", "#/audit", "Audit trail"],
    ];
    const wide: string[] = [];
    for (const [name, hash, title] of screens) {
      await visit(page, hash, title);
      const width = (await page.evaluate("document.documentElement.scrollWidth")) as number;
      if (width > 375) wide.push(`${name}: ${width} px`);
      await keepScreenshot(page, `console-phone-${name}`);
    }
    expect(wide).toEqual([]);
    expect(phone.cspViolations).toEqual([]);
    await phone.context.close();
  }, 60_000);

  test("tenant B's administrator sees nothing of tenant A", async () => {
    const bob = await signIn("bob");
    const page = bob.page;
    expect(await page.textContent("tbody")).not.toContain("acme-user");
    await visit(page, "#/tenants", "Tenants");
    const tree = await page.textContent(".tree");
    expect(tree).toContain("Globex");
    expect(tree).not.toContain("Acme");
    await visit(page, `#/users/${A.someone}`, "User");
    await page.waitForSelector("[role=alert]");
    expect(await page.textContent("main")).not.toContain("carol");
    for (const [hash, title] of [
      ["#/policies", "Policies"],
      ["#/groups", "Groups"],
      ["#/sessions", "Sessions"],
      ["#/clients", "OpenID Connect clients"],
    ]) {
      await visit(page, hash!, title!);
      const text = await page.textContent("main");
      expect(text).not.toContain("alice");
      expect(text).not.toContain("Support");
      expect(text).not.toContain("Grafana");
    }
    await bob.context.close();
  }, 60_000);

  test("status, for an administrator of the top tenant", async () => {
    const olga = await signIn("olga");
    await visit(olga.page, "#/status", "Status");
    expect(await olga.page.textContent("main")).toContain("rest_api");
    await checkScreen(olga.page, "status");
    await olga.context.close();
  }, 60_000);

  test("sign out ends the session on the server too", async () => {
    const token = (await alice.page.evaluate(
      "JSON.parse(sessionStorage.getItem('tessera-console.token')).token",
    )) as string;
    await alice.page.click("header button:text('Sign out')");
    await alice.page.waitForSelector("text=You are signed out.");
    expect(await alice.page.evaluate("sessionStorage.getItem('tessera-console.token')")).toBeNull();
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
    await checkScreen(alice.page, "signed-out");
    await alice.context.close();
  }, 30_000);
});
