// The hosted pages in their languages, in Chromium (issue 43): the sign-in page in French (the
// browser's Accept-Language) and in German (ui_locales), with axe-core clean and screenshots kept
// (SCREENSHOT_DIR); the language switcher followed without JavaScript, its language carried
// through the sign-in's next page; the new pages (new password, address confirmation, the account
// page's devices, applications and language) axe-clean in French and another language; and
// passkeys offered in the username field's autofill (conditional mediation) with the DevTools
// virtual authenticator.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { emails } from "../../src/db/schema.ts";
import { INTERNAL_AUTH_ID, insertToken } from "../../src/services/auth/tokens.ts";
import { allCatalogues, availableLocales } from "../../src/services/i18n/catalogue.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import {
  axeViolations,
  keepScreenshot,
  launchChromium,
  startRelyingParty,
  type RelyingParty,
} from "../helpers/browser.ts";
import { createTenantRow, tokenFor } from "../helpers/fixtures.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";

let t: TestApp;
let served: ServedApp;
let base: string;
let rp: RelyingParty;
let browser: Browser;
let tenant: string;
let admin: string;

beforeAll(async () => {
  t = await createTestApp("pglite", {
    config: {
      mfa: { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 9).toString("base64") }] },
      password_policy: { min_length: 10, common_passwords: true },
    },
  });
  served = serveApp(t);
  // WebAuthn needs a secure context and a domain as RP ID: localhost.
  base = served.url.replace("127.0.0.1", "localhost");
  tenant = await createTenantRow(t.app);
  admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
  rp = await startRelyingParty(t, base, admin);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  rp?.stop();
  await served?.stop();
  await t?.close();
});

async function user(name: string, locale: string | null = null): Promise<string> {
  const r = await t.request("POST", "/0.1/users", {
    token: admin,
    body: { username: name, password: `${name}-password`, email_address: `${name}@example.org`, locale },
  });
  expect(r.status).toBe(200);
  return r.json.uuid;
}

/** A token as the service mails it: one purpose, one ACL. */
async function mailedToken(acl: string): Promise<string> {
  const issued = await insertToken(t.app, t.app.db, {
    authId: INTERNAL_AUTH_ID,
    pbxUserUuid: null,
    acl: [acl],
    metadata: {},
    expiration: 600,
    userAgent: "wazo-auth-email-reset",
    remoteAddr: "",
    sessionTenantUuid: t.app.topTenantUuid,
    mobile: false,
  });
  return issued.record.uuid;
}

async function open(opts: { locale?: string; javaScriptEnabled?: boolean } = {}) {
  const context = await browser.newContext({ locale: opts.locale, javaScriptEnabled: opts.javaScriptEnabled });
  return { context, page: await context.newPage() };
}

describe("hosted pages in their languages", () => {
  test("sign-in in French (Accept-Language) and German (ui_locales): lang, texts, axe clean", async () => {
    const { context, page } = await open({ locale: "fr-FR" });
    await page.goto(await rp.authorizationUrl());
    expect(await page.getAttribute("html", "lang")).toBe("fr");
    expect(await page.getAttribute("html", "dir")).toBe("ltr");
    expect(await page.textContent("h1")).toBe("Connexion à Browser RP");
    expect(await page.textContent("label[for=username]")).toBe("Nom d’utilisateur");
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "login-fr");

    await page.goto(await rp.authorizationUrl({ ui_locales: "de" }));
    expect(await page.getAttribute("html", "lang")).toBe("de");
    expect(await page.textContent("h1")).toBe("Bei Browser RP anmelden");
    expect(await page.textContent("form[action=authorize] button[type=submit]")).toBe("Anmelden");
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "login-de");
    await context.close();
  }, 60_000);

  test("every page a link opens, in every language: its lang, no key left untranslated, axe clean", async () => {
    t.app.config.enabled_http_plugins.user_registration = true;
    const keys = Object.keys(allCatalogues().get("en")!.messages);
    const { context, page } = await open();
    try {
      const pages = [
        await rp.authorizationUrl(),
        `${base}/0.1/oidc/device`,
        `${base}/0.1/oidc/account`,
        `${base}/0.1/oidc/sign-up`,
        `${base}/0.1/oidc/password-reset?token=nope&user_uuid=nope`,
        `${base}/0.1/oidc/email-confirmation?email_uuid=nope&token=nope`,
        `${base}/0.1/oidc/logout`,
      ];
      for (const locale of availableLocales())
        for (const url of pages) {
          const u = new URL(url);
          u.searchParams.set("ui_locales", locale);
          await page.goto(u.toString());
          const text = (await page.textContent("body")) ?? "";
          expect({ url: u.pathname, locale, lang: await page.getAttribute("html", "lang") }).toEqual({
            url: u.pathname,
            locale,
            lang: locale,
          });
          expect({ url: u.pathname, locale, keys: keys.filter((k) => text.includes(k)) }).toEqual({
            url: u.pathname,
            locale,
            keys: [],
          });
          expect({ url: u.pathname, locale, axe: await axeViolations(page) }).toEqual({
            url: u.pathname,
            locale,
            axe: [],
          });
        }
    } finally {
      t.app.config.enabled_http_plugins.user_registration = false;
      await context.close();
    }
  }, 120_000);

  test("the switcher works without JavaScript; the chosen language follows the form to the next page", async () => {
    await user("jules");
    const { context, page } = await open({ locale: "en-GB", javaScriptEnabled: false });
    await page.goto(await rp.authorizationUrl());
    expect(await page.getAttribute("html", "lang")).toBe("en");
    expect(await page.getAttribute("nav.languages a[aria-current]", "lang")).toBe("en");
    await Promise.all([page.waitForLoadState(), page.click("nav.languages a[lang=nl]")]);
    expect(await page.getAttribute("html", "lang")).toBe("nl");
    expect(await page.textContent("h1")).toBe("Inloggen bij Browser RP");
    await page.fill("#username", "jules");
    await page.fill("#password", "wrong");
    await Promise.all([page.waitForLoadState(), page.click("form[action=authorize] button[type=submit]")]);
    expect(await page.getAttribute("html", "lang")).toBe("nl");
    expect(await page.textContent("#login-error")).toBe("Onjuiste gebruikersnaam of onjuist wachtwoord.");
    await page.fill("#username", "jules");
    await page.fill("#password", "jules-password");
    await Promise.all([
      page.waitForURL(`${rp.redirectUri}**`),
      page.click("form[action=authorize] button[type=submit]"),
    ]);
    expect(await page.textContent("#who")).toBe("jules");
    await context.close();
  }, 60_000);

  test("the new-password page (French) and the confirmation page (Spanish): axe clean, rules shown", async () => {
    const uuid = await user("amelie", "fr");
    const token = await mailedToken(`auth.users.password.reset.${uuid}.create`);
    const { context, page } = await open();
    await page.goto(`${base}/0.1/pages/password-reset?token=${token}&user_uuid=${uuid}`);
    expect(new URL(page.url()).pathname).toBe("/0.1/oidc/password-reset");
    expect(await page.getAttribute("html", "lang")).toBe("fr");
    expect(await page.textContent("#password-rules")).toContain("compter au moins 10 caractères");
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "password-reset-fr");
    await page.fill("#new-password", "password");
    await page.fill("#confirm-password", "password");
    await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
    expect(await page.textContent("#reset-error")).toContain("trop court");
    expect(await axeViolations(page)).toEqual([]);
    await page.fill("#new-password", "une-phrase-de-passe");
    await page.fill("#confirm-password", "une-phrase-de-passe");
    await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
    expect(await page.textContent("h1")).toBe("Mot de passe modifié");
    expect(await axeViolations(page)).toEqual([]);

    const rosa = await user("rosa", "es");
    const [email] = await t.app.db.select().from(emails).where(eq(emails.userUuid, rosa));
    await t.app.db.update(emails).set({ confirmed: false }).where(eq(emails.uuid, email!.uuid));
    const confirm = await mailedToken(`auth.emails.${email!.uuid}.confirm.edit`);
    await page.goto(`${base}/0.1/oidc/email-confirmation?email_uuid=${email!.uuid}&token=${confirm}`);
    expect(await page.getAttribute("html", "lang")).toBe("es");
    expect(await axeViolations(page)).toEqual([]);
    await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
    expect(await page.textContent("h1")).toBe("Dirección de correo electrónico confirmada");
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "email-confirmed-es");
    await context.close();
  }, 60_000);

  test("the registration page (Portuguese): rules shown, axe clean", async () => {
    t.app.config.enabled_http_plugins.user_registration = true;
    const { context, page } = await open({ locale: "pt-BR" });
    try {
      await page.goto(`${base}/0.1/oidc/sign-up`);
      expect(await page.getAttribute("html", "lang")).toBe("pt-BR");
      expect(await page.textContent("h1")).toBe("Criar uma conta");
      expect(await page.textContent("#password-rules")).toContain("ter pelo menos 10 caracteres");
      expect(await axeViolations(page)).toEqual([]);
      await keepScreenshot(page, "register-pt-BR");
    } finally {
      t.app.config.enabled_http_plugins.user_registration = false;
      await context.close();
    }
  }, 60_000);

  test("the account page in French and Italian: devices, language; axe clean", async () => {
    await user("camille", "fr");
    const { context, page } = await open();
    await page.goto(`${base}/0.1/oidc/account`);
    await page.fill("#username", "camille");
    await page.fill("#password", "camille-password");
    await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
    expect(await page.getAttribute("html", "lang")).toBe("fr");
    expect(await page.textContent("h1")).toBe("Vos paramètres de connexion");
    expect(await page.textContent("ul.keys")).toContain("(ce navigateur)");
    await page.waitForSelector("button[data-passkey=register]", { state: "visible", timeout: 10_000 });
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "account-fr");
    await page.selectOption("#locale", "it");
    await Promise.all([page.waitForLoadState(), page.click("form:has(#locale) button[type=submit]")]);
    expect(await page.getAttribute("html", "lang")).toBe("it");
    expect(await page.textContent(".notice")).toBe("La lingua è stata salvata.");
    expect(await axeViolations(page)).toEqual([]);
    await context.close();
  }, 60_000);

  test("passkeys in the username field's autofill (conditional mediation), the button kept", async () => {
    await user("pia");
    const context: BrowserContext = await browser.newContext();
    const page: Page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send("WebAuthn.enable");
    await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: {
        protocol: "ctap2",
        transport: "internal",
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    const allowed = await t.request("PUT", `/0.1/tenants/${tenant}/mfa`, {
      token: admin,
      body: { mfa: null, passwordless: true },
    });
    expect(allowed.status).toBe(204);
    // Before pia has a passkey: the field asks for passkeys in its autofill, the button is there,
    // the browser supports conditional mediation, and the page is axe clean with its request pending.
    await page.goto(await rp.authorizationUrl({ prompt: "login" }));
    expect(await page.getAttribute("#username", "autocomplete")).toBe("username webauthn");
    await page.waitForSelector("button[data-passkey=authenticate]", { state: "visible", timeout: 10_000 });
    expect(await page.evaluate("PublicKeyCredential.isConditionalMediationAvailable()")).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, "login-autofill");

    await page.goto(`${base}/0.1/oidc/account`);
    await page.fill("#username", "pia");
    await page.fill("#password", "pia-password");
    await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
    await page.waitForSelector("button[data-passkey=register]", { state: "visible", timeout: 10_000 });
    await Promise.all([page.waitForURL(/account$/), page.click("button[data-passkey=register]")]);
    await page.waitForSelector(".notice");
    // With a passkey: the page's conditional request is answered from the autofill (the virtual
    // authenticator picks the passkey as a person would in the list): signed in, no button clicked.
    await page.goto(await rp.authorizationUrl({ prompt: "login" }));
    await page.waitForURL(`${rp.redirectUri}**`, { timeout: 15_000 });
    expect(await page.textContent("#who")).toBe("pia");
    expect(await page.textContent("#amr")).toBe("hwk mfa");
    await context.close();
  }, 60_000);
});
