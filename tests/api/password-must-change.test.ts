// "Must change the password at next login" (docs/security.md): an administrator sets a password
// with `must_change`; POST /0.1/token then issues a token that may only change the password (no
// refresh token); the hosted sign-in page asks for a new password before continuing; any new
// password clears the flag. The emailed reset link cannot set it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { users } from "../../src/db/schema.ts";
import { inTransaction } from "../../src/db/tx.ts";
import { INTERNAL_AUTH_ID, insertToken } from "../../src/services/auth/tokens.ts";
import { currentCode } from "../../src/services/auth/totp.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { hiddenFieldsOf, openLoginPage, serveApp, submitLogin, type ServedApp } from "../helpers/oidc.ts";

const basic = (login: string, password: string) => `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`;

describeEachDb(
  "must change the password at next login",
  (get) => {
    let tenant = "";
    let admin = "";
    let served: ServedApp;
    let authorizeUrl = "";

    beforeAll(async () => {
      const t = get();
      served = serveApp(t);
      tenant = await createTenantRow(t.app);
      admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const client = (
        await t.request("POST", "/0.1/oidc/clients", {
          token: admin,
          body: { name: "RP", client_type: "confidential", redirect_uris: ["https://rp.test/cb"], first_party: true },
        })
      ).json;
      authorizeUrl = `${served.url}/0.1/oidc/authorize?client_id=${client.client_id}&redirect_uri=${encodeURIComponent("https://rp.test/cb")}&response_type=code&scope=openid&state=s1`;
    });
    afterAll(async () => {
      await served?.stop();
    });

    const flagOf = async (uuid: string) =>
      (await get().app.db.select().from(users).where(eq(users.uuid, uuid)))[0]!.passwordChangeRequired;
    const setByAdmin = (uuid: string, password: string, mustChange?: boolean) =>
      get().request("POST", `/0.1/users/password/reset?user_uuid=${uuid}`, {
        token: admin,
        body: mustChange === undefined ? { password } : { password, must_change: mustChange },
      });
    const login = (username: string, password: string, body: Record<string, unknown> = {}) =>
      get().request("POST", "/0.1/token", { headers: { Authorization: basic(username, password) }, body });

    test("POST /0.1/token: a token that may only change the password; the change clears the flag", async () => {
      const t = get();
      const uuid = await createUserRow(t.app, { tenantUuid: tenant, username: "carol", password: "pw-old" });
      expect((await setByAdmin(uuid, "pw-temporary", true)).status).toBe(204);
      expect(await flagOf(uuid)).toBe(true);
      const entry = (
        await t.request("GET", `/0.1/audit?target_uuid=${uuid}&action=user.password.set`, { token: admin })
      ).json.items[0];
      expect(entry.changes.map((c: { field: string }) => c.field)).toContain("password_change_required");

      const restricted = await login("carol", "pw-temporary", { access_type: "offline", client_id: "softphone" });
      expect(restricted.status).toBe(200);
      expect(restricted.json.data.acl).toEqual([`auth.users.${uuid}.password.update`]);
      expect(restricted.json.data.refresh_token ?? null).toBeNull();
      const token = restricted.json.data.token;
      expect((await t.request("GET", `/0.1/users/${uuid}`, { token })).status).toBe(403);
      const changed = await t.request("PUT", `/0.1/users/${uuid}/password`, {
        token,
        body: { old_password: "pw-temporary", new_password: "pw-chosen-by-carol" },
      });
      expect(changed.status).toBe(204);
      expect(await flagOf(uuid)).toBe(false);
      const full = await login("carol", "pw-chosen-by-carol");
      expect(full.json.data.acl).not.toContain(`auth.users.${uuid}.password.update`);
    });

    test("an administrator's password without must_change, or the emailed link's, leaves no flag", async () => {
      const t = get();
      const uuid = await createUserRow(t.app, { tenantUuid: tenant, username: "dave", password: "pw-old" });
      await setByAdmin(uuid, "pw-1", true);
      expect((await setByAdmin(uuid, "pw-2")).status).toBe(204);
      expect(await flagOf(uuid)).toBe(false);
      // The token the reset email carries (services/auth/password-reset.ts).
      const emailed = (
        await inTransaction(t.app, (tx) =>
          insertToken(t.app, tx, {
            authId: INTERNAL_AUTH_ID,
            pbxUserUuid: null,
            acl: [`auth.users.password.reset.${uuid}.create`],
            metadata: {},
            expiration: 600,
            userAgent: "wazo-auth-email-reset",
            remoteAddr: "",
            sessionTenantUuid: t.app.topTenantUuid,
            mobile: false,
          }),
        )
      ).record.uuid;
      const viaLink = await t.request("POST", `/0.1/users/password/reset?user_uuid=${uuid}`, {
        token: emailed,
        body: { password: "pw-3", must_change: true },
      });
      expect(viaLink.status).toBe(204);
      expect(await flagOf(uuid)).toBe(false);
      expect((await setByAdmin(uuid, "pw-4", "yes" as never)).status).toBe(400);
    });

    test("the hosted sign-in page asks for a new password, then continues the sign-in", async () => {
      const t = get();
      const uuid = await createUserRow(t.app, { tenantUuid: tenant, username: "erin", password: "pw-old" });
      await setByAdmin(uuid, "pw-temporary", true);
      const page = await openLoginPage(authorizeUrl);
      const step = await submitLogin(served.url, page, "erin", "pw-temporary");
      const html = await step.text();
      expect(step.status).toBe(200);
      expect(html).toContain("Choose a new password");
      expect(step.headers.get("location")).toBeNull();
      const post = (fields: Record<string, string>) =>
        fetch(`${served.url}/0.1/oidc/authorize-mfa`, {
          method: "POST",
          redirect: "manual",
          body: new URLSearchParams({ ...hiddenFieldsOf(html), ...fields }),
          headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: page.cookie },
        });
      const differ = await post({ new_password: "pw-new-erin", confirm_password: "pw-new-erin-typo" });
      expect([differ.status, await differ.text()]).toEqual([400, expect.stringContaining("The two passwords differ")]);
      expect(await flagOf(uuid)).toBe(true);
      const done = await post({ new_password: "pw-new-erin", confirm_password: "pw-new-erin" });
      expect(done.status).toBe(303);
      const back = new URL(done.headers.get("location")!);
      expect([back.origin + back.pathname, Boolean(back.searchParams.get("code"))]).toEqual([
        "https://rp.test/cb",
        true,
      ]);
      expect(await flagOf(uuid)).toBe(false);
      expect((await login("erin", "pw-new-erin")).json.data.acl).not.toContain(`auth.users.${uuid}.password.update`);
      // Used once: the same form again is refused.
      expect((await post({ new_password: "pw-again", confirm_password: "pw-again" })).status).toBe(400);
    });

    test("with a second factor: the code first, then the new password, then the sign-in", async () => {
      const t = get();
      const uuid = await createUserRow(t.app, { tenantUuid: tenant, username: "fay", password: "pw-old" });
      const own = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: uuid, tenantUuid: tenant })).token;
      const started = await t.request("POST", "/0.1/users/me/mfa/totp", { token: own });
      await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
        token: own,
        body: { code: currentCode(started.json.secret) },
      });
      await setByAdmin(uuid, "pw-temporary", true);
      const page = await openLoginPage(authorizeUrl);
      const verify = await (await submitLogin(served.url, page, "fay", "pw-temporary")).text();
      expect(verify).toContain("Authentication code");
      const post = (html: string, fields: Record<string, string>) =>
        fetch(`${served.url}/0.1/oidc/authorize-mfa`, {
          method: "POST",
          redirect: "manual",
          body: new URLSearchParams({ ...hiddenFieldsOf(html), ...fields }),
          headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: page.cookie },
        });
      const code = await post(verify, { code: currentCode(started.json.secret, Date.now() + 30_000) });
      const choose = await code.text();
      expect([code.status, choose]).toEqual([200, expect.stringContaining("Choose a new password")]);
      const done = await post(choose, { new_password: "pw-new-fay", confirm_password: "pw-new-fay" });
      expect(done.status).toBe(303);
      expect(new URL(done.headers.get("location")!).searchParams.get("code")).toBeTruthy();
      expect(await flagOf(uuid)).toBe(false);
    });
  },
  { config: { mfa: { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 5).toString("base64") }] } } },
);
