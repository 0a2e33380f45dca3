// The self-service pages of issue 43, end to end over HTTP with a real SMTP capture: the reset
// link followed from the mail to a new password (in the user's language, with the rules that
// apply); the confirmation link and the scanner-safe confirmation page; and on the account page,
// a third-party client's consent withdrawn (its refresh token ends), the other devices signed out,
// and the user's language chosen.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import * as oidc from "openid-client";
import { emails, users } from "../../src/db/schema.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, tokenFor } from "../helpers/fixtures.ts";
import {
  discoverClient,
  hiddenFieldsOf,
  serveApp,
  startAuthorization,
  TestBrowser,
  type ServedApp,
} from "../helpers/oidc.ts";
import { startSmtp } from "../helpers/smtp-server.ts";

const smtp = await startSmtp();
afterAll(() => smtp.close());
const uniq = () => crypto.randomUUID().slice(0, 8);
/** A mail's text, quoted-printable undone as UTF-8 (the capture's `text` reads each byte as a character). */
const utf8 = (raw: string) =>
  Buffer.from(
    raw
      .replace(/=\r?\n/g, "")
      .replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
    "latin1",
  ).toString("utf8");
const linkIn = (text: string) => /(http:\/\/127\.0\.0\.1:\d+\/0\.1\/\S+)/.exec(text)?.[1];
const REDIRECT = "https://rp.example.com/callback";

describeEachDb(
  "self-service pages",
  (get) => {
    let t: TestApp;
    let served: ServedApp;
    let tenant: string;
    let admin: string;

    beforeAll(() => {
      t = get();
    });
    afterAll(async () => {
      await served?.stop();
    });

    /** A user made through the API (the stock self-service policy), with a confirmed address. */
    async function user(locale: string | null, confirmed = true) {
      const name = `u${uniq()}`;
      const made = await t.request("POST", "/0.1/users", {
        token: admin,
        body: { username: name, password: "first-password-1", email_address: `${name}@example.org`, locale },
      });
      expect(made.status).toBe(200);
      if (!confirmed)
        await t.app.db.update(emails).set({ confirmed: false }).where(eq(emails.userUuid, made.json.uuid));
      return { name, uuid: made.json.uuid as string, address: `${name}@example.org` };
    }

    test("the reset link from the mail: the page in the user's language with the rules, then a new password", async () => {
      served ??= serveApp(t, Number(new URL(t.app.config.public_url!).port));
      tenant ??= await createTenantRow(t.app);
      admin ??= (await tokenFor(t.app, { acl: ["#"], tenantUuid: t.app.topTenantUuid })).token;
      const u = await user("fr");
      const asked = await t.request("GET", `/0.1/users/password/reset?username=${u.name}`);
      expect(asked.status).toBe(204);
      const mail = await smtp.waitForMail((m) => m.to.includes(u.address));
      expect(mail.text).toContain("Subject: Demande de nouveau mot de passe");
      expect(utf8(mail.raw)).toContain(`Bonjour ${u.name},`);
      const link = linkIn(mail.text)!;
      expect(link).toContain("/0.1/pages/password-reset?token=");

      const browser = new TestBrowser(served.url);
      const hop = await browser.get(link);
      expect(hop.res.status).toBe(303);
      expect(hop.location!.pathname).toBe("/0.1/oidc/password-reset");
      const form = await browser.get(hop.location!.toString());
      expect(form.res.status).toBe(200);
      expect(form.html).toContain('<html lang="fr" dir="ltr">');
      expect(form.html).toContain("compter au moins 12 caractères");
      expect(form.html).toContain("ne pas être un mot de passe courant");
      expect(form.res.headers.get("content-security-policy")).toContain("default-src 'none'");
      const fields = hiddenFieldsOf(form.html);
      expect(Object.keys(fields).sort()).toEqual(["csrf_token", "token", "ui_locales", "user_uuid"]);

      const post = (extra: Record<string, string>) => browser.post("/0.1/oidc/password-reset", { ...fields, ...extra });
      let r = await post({ new_password: "a-long-new-password", confirm_password: "another-long-one" });
      expect([r.res.status, r.html.includes("Les deux mots de passe sont différents")]).toEqual([400, true]);
      r = await post({ new_password: "short", confirm_password: "short" });
      expect([r.res.status, r.html.includes("trop court")]).toEqual([400, true]);
      r = await post({ new_password: "a-long-new-password", confirm_password: "a-long-new-password" });
      expect([r.res.status, r.html.includes("Mot de passe modifié")]).toEqual([200, true]);
      const login = await t.request("POST", "/0.1/token", {
        body: {},
        headers: { Authorization: `Basic ${btoa(`${u.name}:a-long-new-password`)}` },
      });
      expect(login.status).toBe(200);
      // Single use: the link is spent.
      const again = await browser.get(hop.location!.toString());
      expect([again.res.status, again.html.includes("Ce lien n’est plus valide")]).toEqual([400, true]);
      // Without the CSRF cookie the form is refused, whatever the token.
      const stranger = new TestBrowser(served.url);
      const forged = await stranger.post("/0.1/oidc/password-reset", {
        ...fields,
        new_password: "x-long-password-2",
        confirm_password: "x-long-password-2",
      });
      expect(forged.res.status).toBe(400);
    });

    test("a wrong or foreign token shows the invalid-link page and changes nothing", async () => {
      const u = await user(null);
      const { token } = await tokenFor(t.app, { acl: ["#"] });
      const browser = new TestBrowser(served.url);
      for (const q of [`token=${token}&user_uuid=${u.uuid}`, `token=nope&user_uuid=${u.uuid}`, "user_uuid=x"]) {
        const r = await browser.get(`${served.url}/0.1/oidc/password-reset?${q}`);
        expect([r.res.status, r.html.includes("This link is not valid any more")]).toEqual([400, true]);
      }
    });

    test("confirmation: the mailed link in the user's language; the scanner-safe page confirms only by its form", async () => {
      const u = await user("de", false);
      const [email] = await t.app.db.select().from(emails).where(eq(emails.userUuid, u.uuid));
      const sent = await t.request("GET", `/0.1/users/${u.uuid}/emails/${email!.uuid}/confirm`, { token: admin });
      expect(sent.status).toBe(204);
      const mail = await smtp.waitForMail((m) => m.to.includes(u.address));
      expect(utf8(mail.raw)).toContain(`Für ${u.name} wurde ein neues Tessera-Konto angelegt.`);
      const token = /token=([0-9a-f-]{36})/.exec(mail.text)![1]!;

      // The page: GET shows the address and confirms nothing (a mail scanner opening links).
      const browser = new TestBrowser(served.url);
      const page = await browser.get(
        `${served.url}/0.1/oidc/email-confirmation?email_uuid=${email!.uuid}&token=${token}`,
      );
      expect(page.res.status).toBe(200);
      expect(page.html).toContain(`Bestätigen Sie, dass <strong>${u.address}</strong> Ihre E-Mail-Adresse ist.`);
      const unconfirmed = await t.app.db.select().from(emails).where(eq(emails.uuid, email!.uuid));
      expect(unconfirmed[0]!.confirmed).toBe(false);
      const done = await browser.post("/0.1/oidc/email-confirmation", hiddenFieldsOf(page.html));
      expect([done.res.status, done.html.includes("E-Mail-Adresse bestätigt")]).toEqual([200, true]);
      expect((await t.app.db.select().from(emails).where(eq(emails.uuid, email!.uuid)))[0]!.confirmed).toBe(true);
      const spent = await browser.get(
        `${served.url}/0.1/oidc/email-confirmation?email_uuid=${email!.uuid}&token=${token}`,
      );
      expect(spent.res.status).toBe(400);

      // wazo-auth's link (the stock mail's) answers its body template in the owner's language.
      const v = await user("it", false);
      const [other] = await t.app.db.select().from(emails).where(eq(emails.userUuid, v.uuid));
      await t.request("GET", `/0.1/users/${v.uuid}/emails/${other!.uuid}/confirm`, { token: admin });
      const itMail = await smtp.waitForMail((m) => m.to.includes(v.address));
      const answered = await fetch(linkIn(itMail.text)!);
      expect(answered.status).toBe(200);
      expect(await answered.text()).toContain(
        '<html lang="it"><head><meta charset="utf-8"><title>Indirizzo email confermato',
      );
    });

    test("the account page: withdrawing an application's consent ends its refresh token; other devices signed out; language saved", async () => {
      const u = await user(null);
      const client = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: { name: "Partner Portal", client_type: "confidential", redirect_uris: [REDIRECT], first_party: false },
      });
      expect(client.status).toBe(201);
      const config = await discoverClient(new URL(`${served.url}/0.1/oidc`), client.json);
      const flow = await startAuthorization(config, REDIRECT, { scope: "openid offline_access" });
      const rp = new TestBrowser(served.url);
      const consent = await rp.signIn(flow.url, u.name, "first-password-1");
      const allowed = await rp.consent(consent.html, "allow");
      const tokens = await oidc.authorizationCodeGrant(config, allowed.location!, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
      });
      expect(tokens.refresh_token).toBeTruthy();

      const browser = new TestBrowser(served.url);
      const login = hiddenFieldsOf((await browser.get(`${served.url}/0.1/oidc/account`)).html);
      const signedIn = await browser.post("/0.1/oidc/account", {
        ...login,
        username: u.name,
        password: "first-password-1",
      });
      expect(signedIn.res.status).toBe(303);
      const settings = await browser.get(`${served.url}/0.1/oidc/account`);
      expect(settings.html).toContain("Applications you allowed");
      expect(settings.html).toContain("Withdraw access for Partner Portal");
      expect(settings.html).toContain("Signed-in devices");
      expect(settings.html).toContain("(this browser)");
      const csrf = hiddenFieldsOf(settings.html).csrf_token!;

      const withdrawn = await browser.post("/0.1/oidc/account", {
        csrf_token: csrf,
        step: "consent-withdraw",
        client: client.json.client_id,
      });
      expect(withdrawn.html).toContain("Access withdrawn: Partner Portal must ask you again.");
      expect(withdrawn.html).not.toContain("Withdraw access for Partner Portal");
      await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toThrow();
      // The next authorization asks again.
      const next = await startAuthorization(config, REDIRECT, { scope: "openid" });
      expect((await rp.get(next.url)).html).toContain("wants to access your account");

      // Other devices: the relying party's sessions end, this browser's stays.
      const ended = await browser.post("/0.1/oidc/account", { csrf_token: csrf, step: "session-end-others" });
      expect(ended.html).toMatch(/other devices? (is|are) signed out\./);
      expect((await t.request("HEAD", `/0.1/token/${tokens.access_token}`, { token: admin })).status).toBe(404);
      expect((await browser.get(`${served.url}/0.1/oidc/account`)).html).toContain("(this browser)");

      // The language: saved on the user (the REST API shows it), and the page follows it.
      const saved = await browser.post("/0.1/oidc/account", { csrf_token: csrf, step: "locale", locale: "nl" });
      expect(saved.html).toContain('<html lang="nl" dir="ltr">');
      expect(saved.html).toContain("Je taal is opgeslagen.");
      expect((await t.app.db.select().from(users).where(eq(users.uuid, u.uuid)))[0]!.locale).toBe("nl");
      const refused = await browser.post("/0.1/oidc/account", { csrf_token: csrf, step: "locale", locale: "xx-YY" });
      expect(refused.res.status).toBe(400);
      expect((await t.app.db.select().from(users).where(eq(users.uuid, u.uuid)))[0]!.locale).toBe("nl");
    });

    test("the consent page speaks the user's language; a tenant's default speaks where nothing else does", async () => {
      const u = await user("de");
      const client = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: { name: "Wiki", client_type: "confidential", redirect_uris: [REDIRECT], first_party: false },
      });
      const config = await discoverClient(new URL(`${served.url}/0.1/oidc`), client.json);
      const rp = new TestBrowser(served.url);
      const consent = await rp.signIn((await startAuthorization(config, REDIRECT)).url, u.name, "first-password-1");
      expect(consent.html).toContain('<html lang="de" dir="ltr">');
      expect(consent.html).toContain("Wiki möchte auf Ihr Konto zugreifen");
      // The sign-in page before anyone is known: the tenant's default (configuration), then English.
      const page = () => new TestBrowser(served.url).get(url);
      const url = (await startAuthorization(config, REDIRECT)).url;
      expect((await page()).html).toContain('<html lang="en" dir="ltr">');
      t.app.config.oidc.tenant_default_locales[t.app.topTenantUuid] = "it";
      try {
        expect((await page()).html).toContain('<html lang="it" dir="ltr">');
      } finally {
        delete t.app.config.oidc.tenant_default_locales[t.app.topTenantUuid];
      }
    });

    test("registration, when open: the form with the rules, a refusal in the page's words, then the confirmation mail", async () => {
      const browser = new TestBrowser(served.url);
      const closed = await browser.get(`${served.url}/0.1/oidc/sign-up?ui_locales=es`);
      expect([closed.res.status, closed.html.includes("Aquí no se pueden crear cuentas.")]).toEqual([404, true]);
      t.app.config.enabled_http_plugins.user_registration = true;
      try {
        const form = await browser.get(`${served.url}/0.1/oidc/sign-up?ui_locales=es`);
        expect(form.res.status).toBe(200);
        expect(form.html).toContain("tener al menos 12 caracteres");
        const name = `reg${uniq()}`;
        const fields = { ...hiddenFieldsOf(form.html), username: name, email_address: `${name}@example.org` };
        let r = await browser.post("/0.1/oidc/sign-up", {
          ...fields,
          new_password: "short",
          confirm_password: "short",
        });
        expect([r.res.status, r.html.includes("demasiado corta")]).toEqual([400, true]);
        expect(r.html).toContain(`value="${name}"`);
        r = await browser.post("/0.1/oidc/sign-up", {
          ...fields,
          new_password: "a-long-new-password",
          confirm_password: "a-long-new-password",
        });
        expect([r.res.status, r.html.includes("Revisa tu correo")]).toEqual([200, true]);
        const mail = await smtp.waitForMail((m) => m.to.includes(`${name}@example.org`));
        expect(mail.text).toContain("/confirm?token=");
        r = await browser.post("/0.1/oidc/sign-up", {
          ...fields,
          new_password: "a-long-new-password",
          confirm_password: "a-long-new-password",
        });
        expect([r.res.status, r.html.includes("ya están en uso")]).toEqual([400, true]);
      } finally {
        t.app.config.enabled_http_plugins.user_registration = false;
      }
    });

    test("an account cannot withdraw another user's consent nor end another user's session", async () => {
      const a = await user(null);
      const b = await user(null);
      const bSession = await tokenFor(t.app, { acl: ["auth.users.me.#"], userUuid: b.uuid });
      const browser = new TestBrowser(served.url);
      const login = hiddenFieldsOf((await browser.get(`${served.url}/0.1/oidc/account`)).html);
      await browser.post("/0.1/oidc/account", { ...login, username: a.name, password: "first-password-1" });
      const csrf = hiddenFieldsOf((await browser.get(`${served.url}/0.1/oidc/account`)).html).csrf_token!;
      const r = await browser.post("/0.1/oidc/account", {
        csrf_token: csrf,
        step: "session-end",
        session: bSession.sessionUuid,
      });
      expect(r.res.status).toBe(200);
      expect((await t.request("HEAD", `/0.1/token/${bSession.token}`, { token: admin })).status).toBe(204);
    });
  },
  {
    config: {
      public_url: `http://127.0.0.1:${40000 + Math.floor(Math.random() * 20000)}`,
      smtp: { hostname: "127.0.0.1", port: smtp.port },
      password_policy: { min_length: 12, common_passwords: true },
      mfa: { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 3).toString("base64") }] },
    },
  },
);
