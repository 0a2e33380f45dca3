// The account page's session is a sign-in made there: a token put by hand in its cookie (stolen,
// issued before the enrolment, or an access token of a third-party application) is no session, so
// it cannot reach the page's passkey removal, which asks nothing more of a signed-in user.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { passkeys } from "../../src/db/schema.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { hiddenFieldsOf, serveApp, TestBrowser, type ServedApp } from "../helpers/oidc.ts";
import { softAuthenticator } from "../helpers/soft-authenticator.ts";

const PAGE = "/0.1/oidc/account";
const WITH_MFA_KEY = {
  config: { mfa: { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 3).toString("base64") }] } },
};

describeEachDb(
  "the account page's session",
  (get) => {
    let t: TestApp;
    let served: ServedApp;
    beforeAll(() => {
      t = get();
      served = serveApp(t);
    });
    afterAll(async () => {
      await served?.stop();
    });

    test("a bare token in the session cookie is no session: the sign-in form, and no passkey removed", async () => {
      const uuid = await createUserRow(t.app, { username: "held-token", password: "pw-secret" });
      const { token } = await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: uuid });
      const key = softAuthenticator();
      const options = await t.request("POST", "/0.1/users/me/mfa/passkeys/registration", { token });
      const passkey = await t.request("POST", "/0.1/users/me/mfa/passkeys", {
        token,
        body: {
          challenge_id: options.json.challenge_id,
          name: "Laptop",
          credential: key.register(options.json.options, "http://localhost"),
        },
      });
      expect(passkey.status).toBe(201);
      const browser = new TestBrowser(served.url);
      const csrf = hiddenFieldsOf((await browser.get(`${served.url}${PAGE}`)).html).csrf_token!;
      browser.cookie += `; tessera_account=${token}`;
      const shown = await browser.get(`${served.url}${PAGE}`);
      expect(shown.html).toContain('name="password"');
      expect(shown.html).not.toContain("Signed in as");
      const removal = await browser.post(PAGE, {
        csrf_token: csrf,
        step: "passkey-remove",
        passkey: passkey.json.uuid,
      });
      expect(removal.res.status).toBe(401);
      expect(await t.app.db.select().from(passkeys).where(eq(passkeys.userUuid, uuid))).toHaveLength(1);
    });

    test("a sign-in on the page opens the session; an altered cookie does not", async () => {
      // made through the API: in its tenant's all-users group, so holding the stock tessera_user policy
      const admin = (await tokenFor(t.app, { acl: ["#"] })).token;
      const made = await t.request("POST", "/0.1/users", {
        token: admin,
        body: { username: "page-user", password: "pw-secret" },
      });
      expect(made.status).toBe(200);
      const browser = new TestBrowser(served.url);
      const form = hiddenFieldsOf((await browser.get(`${served.url}${PAGE}`)).html);
      const signedIn = await browser.post(PAGE, { ...form, username: "page-user", password: "pw-secret" });
      expect(signedIn.res.status).toBe(303);
      expect((await browser.get(`${served.url}${PAGE}`)).html).toContain("Signed in as <strong>page-user</strong>");
      const sealed = /tessera_account=([^;]+)/.exec(browser.cookie)![1]!;
      const [header, payload, signature] = sealed.split(".");
      const altered = Buffer.from(
        JSON.stringify({ ...JSON.parse(Buffer.from(payload!, "base64url").toString()), exp: 9_999_999_999 }),
      ).toString("base64url");
      browser.cookie = browser.cookie.replace(sealed, `${header}.${altered}.${signature}`);
      expect((await browser.get(`${served.url}${PAGE}`)).html).not.toContain("Signed in as");
    });
  },
  WITH_MFA_KEY,
);
