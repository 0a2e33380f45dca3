// The account page's linked upstream identities (issue 43, docs/federation.md "Links"): each listed
// with its provider's display name and the date it was linked, an "unlink" form (POST with the page's
// CSRF token, as the other account-page actions); unlinking removes the link (audited), and is refused
// with a clear message when it is the user's only way left to sign in (method `oidc`, or no password).
// The page with its links, and with the refusal, in Chromium with axe-core clean, in German.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import type { Browser } from "playwright-core";
import { auditEntries as audit, upstreamOidcLinks, upstreamOidcProviders, users } from "../../src/db/schema.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { axeViolations, keepScreenshot, launchChromium } from "../helpers/browser.ts";
import { createTenantRow, tokenFor } from "../helpers/fixtures.ts";
import { hiddenFieldsOf, serveApp, TestBrowser, type ServedApp } from "../helpers/oidc.ts";

const uniq = () => crypto.randomUUID().slice(0, 8);

describeEachDb(
  "account page: linked upstream identities",
  (get) => {
    let t: TestApp;
    let served: ServedApp;
    let tenant: string;
    let admin: string;
    let chromium: Browser;

    beforeAll(async () => {
      t = get();
      served = serveApp(t);
      tenant = await createTenantRow(t.app);
      admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      chromium = await launchChromium();
    }, 60_000);
    afterAll(async () => {
      await chromium?.close();
      await served?.stop();
    });

    /** A provider of the tenant, as the REST API stores it (its discovery is not needed to list or unlink). */
    async function provider(displayName: string): Promise<string> {
      const [row] = await t.app.db
        .insert(upstreamOidcProviders)
        .values({
          tenantUuid: tenant,
          name: `p-${uniq()}`,
          displayName,
          issuer: "https://idp.example.com",
          clientId: "tessera",
          clientSecret: "s3cret",
          scopes: ["openid"],
          provisioning: "link",
          claimMapping: {},
        })
        .returning();
      return row!.uuid;
    }

    async function user(locale: string | null = null) {
      const name = `u${uniq()}`;
      const made = await t.request("POST", "/0.1/users", {
        token: admin,
        body: { username: name, password: "first-password-1", locale },
      });
      expect(made.status).toBe(200);
      return { name, uuid: made.json.uuid as string };
    }

    const link = (providerUuid: string, userUuid: string) =>
      t.app.db.insert(upstreamOidcLinks).values({ providerUuid, subject: `sub-${uniq()}`, userUuid });
    const linksOf = async (userUuid: string) =>
      (await t.app.db.select().from(upstreamOidcLinks).where(eq(upstreamOidcLinks.userUuid, userUuid))).map(
        (l) => l.providerUuid,
      );

    async function signedIn(name: string) {
      const browser = new TestBrowser(served.url);
      const login = hiddenFieldsOf((await browser.get(`${served.url}/0.1/oidc/account`)).html);
      const r = await browser.post("/0.1/oidc/account", { ...login, username: name, password: "first-password-1" });
      expect(r.res.status).toBe(303);
      const settings = await browser.get(`${served.url}/0.1/oidc/account`);
      return { browser, settings, csrf: hiddenFieldsOf(settings.html).csrf_token! };
    }

    test("listed with name and date; unlink needs the CSRF token, removes the link, audited", async () => {
      const u = await user();
      const corp = await provider("Corp SSO");
      const partner = await provider("Partner IdP");
      await link(corp, u.uuid);
      await link(partner, u.uuid);
      const { browser, settings, csrf } = await signedIn(u.name);
      expect(settings.html).toContain("<h2>Linked accounts</h2>");
      expect(settings.html).toContain("<strong>Corp SSO</strong>");
      expect(settings.html).toContain("Unlink Partner IdP");
      expect(settings.html).toMatch(/linked on [A-Z][a-z]{2} \d{1,2}, \d{4}/);

      // Without the page's CSRF token: refused, nothing removed.
      const forged = await browser.post("/0.1/oidc/account", {
        csrf_token: "forged",
        step: "link-remove",
        provider: partner,
      });
      expect(forged.res.status).toBe(400);
      expect((await linksOf(u.uuid)).sort()).toEqual([corp, partner].sort());

      const gone = await browser.post("/0.1/oidc/account", {
        csrf_token: csrf,
        step: "link-remove",
        provider: partner,
      });
      expect(gone.res.status).toBe(200);
      expect(gone.html).toContain("Partner IdP is unlinked: it no longer signs you in here.");
      expect(gone.html).not.toContain("Unlink Partner IdP");
      expect(await linksOf(u.uuid)).toEqual([corp]);
      const entries = await t.app.db
        .select()
        .from(audit)
        .where(and(eq(audit.targetUuid, u.uuid), eq(audit.action, "user.oidc_link.delete")));
      expect(entries).toHaveLength(1);
      expect(entries[0]!.actorUserUuid).toBe(u.uuid);

      // Another user's link, or one that does not exist: nothing happens.
      const other = await user();
      await link(corp, other.uuid);
      const foreign = await browser.post("/0.1/oidc/account", {
        csrf_token: csrf,
        step: "link-remove",
        provider: partner,
      });
      expect(foreign.res.status).toBe(200);
      expect(await linksOf(other.uuid)).toEqual([corp]);

      // The last link of a user with a password and method native: allowed (the password remains).
      const last = await browser.post("/0.1/oidc/account", { csrf_token: csrf, step: "link-remove", provider: corp });
      expect(last.html).toContain("Corp SSO is unlinked");
      expect(last.html).not.toContain("Linked accounts");
      expect(await linksOf(u.uuid)).toEqual([]);
    });

    test("the only way to sign in (method oidc, or native without a password): refused with a clear message", async () => {
      const u = await user();
      const corp = await provider("Corp SSO");
      await link(corp, u.uuid);
      const { browser, csrf } = await signedIn(u.name);
      // An administrator makes the account sign in through its provider only.
      await t.app.db.update(users).set({ authenticationMethod: "oidc" }).where(eq(users.uuid, u.uuid));
      const refused = await browser.post("/0.1/oidc/account", {
        csrf_token: csrf,
        step: "link-remove",
        provider: corp,
      });
      expect(refused.res.status).toBe(409);
      expect(refused.html).toContain(
        "Corp SSO is the only way you can sign in: unlinking it would lock you out of your account. Ask your administrator to set a password for you first.",
      );
      expect(refused.html).toContain("Unlink Corp SSO");
      expect(await linksOf(u.uuid)).toEqual([corp]);

      await t.app.db
        .update(users)
        .set({ authenticationMethod: "native", passwordHash: null, passwordSalt: null })
        .where(eq(users.uuid, u.uuid));
      const noPassword = await browser.post("/0.1/oidc/account", {
        csrf_token: csrf,
        step: "link-remove",
        provider: corp,
      });
      expect(noPassword.res.status).toBe(409);
      expect(await linksOf(u.uuid)).toEqual([corp]);

      // With a second link, the first may go: another way to sign in remains.
      const partner = await provider("Partner IdP");
      await link(partner, u.uuid);
      const ok = await browser.post("/0.1/oidc/account", { csrf_token: csrf, step: "link-remove", provider: corp });
      expect(ok.res.status).toBe(200);
      expect(await linksOf(u.uuid)).toEqual([partner]);
    });

    test("Chromium, in German: the links listed, unlink and its refusal; axe clean", async () => {
      const u = await user("de");
      const corp = await provider("Firmen-SSO");
      const partner = await provider("Partner-IdP");
      await link(corp, u.uuid);
      await link(partner, u.uuid);
      const context = await chromium.newContext();
      const page = await context.newPage();
      await page.goto(`${served.url}/0.1/oidc/account`);
      await page.fill("#username", u.name);
      await page.fill("#password", "first-password-1");
      await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
      expect(await page.getAttribute("html", "lang")).toBe("de");
      expect(await page.textContent("body")).toContain("Verknüpfte Konten");
      expect(await page.textContent("body")).toMatch(/verknüpft am \d{2}\.\d{2}\.\d{4}/);
      expect(await axeViolations(page)).toEqual([]);
      await keepScreenshot(page, "account-links-de");

      await Promise.all([
        page.waitForLoadState(),
        page.click("button:has-text('Verknüpfung mit Partner-IdP aufheben')"),
      ]);
      expect(await page.textContent(".notice")).toContain("Die Verknüpfung mit Partner-IdP ist aufgehoben");
      expect(await axeViolations(page)).toEqual([]);

      await t.app.db.update(users).set({ authenticationMethod: "oidc" }).where(eq(users.uuid, u.uuid));
      await Promise.all([
        page.waitForLoadState(),
        page.click("button:has-text('Verknüpfung mit Firmen-SSO aufheben')"),
      ]);
      expect(await page.textContent("body")).toContain("Firmen-SSO ist Ihre einzige Möglichkeit, sich anzumelden");
      expect(await axeViolations(page)).toEqual([]);
      expect(await linksOf(u.uuid)).toEqual([corp]);
      await context.close();
    }, 60_000);
  },
  {
    config: {
      password_policy: { min_length: 12, common_passwords: true },
      mfa: { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 4).toString("base64") }] },
    },
  },
);
