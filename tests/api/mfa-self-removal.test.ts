// A user removing its own second factors proves a factor whichever route names it: `me` or its own
// uuid (an ACL's `me` also matches the caller's uuid). An administrator acting on another user
// resets without one; an administrator acting on its own user is that user. The other self-service
// routes reachable by the own uuid (password, emails, sessions, refresh tokens) behave as their
// `me` form or ask the same proof.
import { expect, test } from "bun:test";
import { currentCode } from "../../src/services/auth/totp.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createUserRow, tenantFamily, tokenFor } from "../helpers/fixtures.ts";
import { softAuthenticator } from "../helpers/soft-authenticator.ts";

/** PostgreSQL serves MFA only with a configured key (PGlite would generate one). */
const WITH_MFA_KEY = {
  config: { mfa: { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 7).toString("base64") }] } },
};

const ORIGIN = "http://localhost";
const SELF_SERVICE = ["auth.users.me.#"];

/** A user (of `tenantUuid`) with a confirmed TOTP factor and a passkey, and a token holding `acl`. */
async function enrolled(t: TestApp, opts: { tenantUuid?: string; acl?: string[] } = {}) {
  const uuid = await createUserRow(t.app, { password: "pw-secret", tenantUuid: opts.tenantUuid });
  const { token } = await tokenFor(t.app, {
    acl: opts.acl ?? SELF_SERVICE,
    userUuid: uuid,
    tenantUuid: opts.tenantUuid,
  });
  const started = await t.request("POST", "/0.1/users/me/mfa/totp", { token });
  expect(started.status).toBe(201);
  const confirmed = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
    token,
    body: { code: currentCode(started.json.secret) },
  });
  expect(confirmed.status).toBe(200);
  const key = softAuthenticator();
  const options = await t.request("POST", "/0.1/users/me/mfa/passkeys/registration", { token });
  const passkey = await t.request("POST", "/0.1/users/me/mfa/passkeys", {
    token,
    body: {
      challenge_id: options.json.challenge_id,
      name: "Laptop",
      credential: key.register(options.json.options, ORIGIN),
    },
  });
  expect(passkey.status).toBe(201);
  const codes = confirmed.json.recovery_codes as string[];
  return { uuid, token, passkey: passkey.json.uuid as string, codes };
}

const methods = async (t: TestApp, admin: string, uuid: string) =>
  (await t.request("GET", `/0.1/users/${uuid}/mfa`, { token: admin })).json.methods;

describeEachDb(
  "removing one's own factors needs a proof, whichever route names the user",
  (get) => {
    test("TOTP by the own uuid: 400 without a code or with a wrong one, the factor kept; 204 with a recovery code", async () => {
      const t = get();
      const u = await enrolled(t);
      const path = `/0.1/users/${u.uuid}/mfa/totp`;
      const bare = await t.request("DELETE", path, { token: u.token });
      expect([bare.status, bare.json.details.code.constraint_id]).toEqual([400, "required"]);
      expect((await t.request("DELETE", path, { token: u.token, body: { code: "not-a-code" } })).status).toBe(400);
      expect(await methods(t, u.token, u.uuid)).toEqual(["totp", "recovery_code", "passkey"]);
      expect((await t.request("DELETE", path, { token: u.token, body: { code: u.codes[0] } })).status).toBe(204);
      expect(await methods(t, u.token, u.uuid)).toEqual(["passkey"]);
    });

    test("one passkey by the own uuid: 400 without a proof, kept; 204 with a code", async () => {
      const t = get();
      const u = await enrolled(t);
      const path = `/0.1/users/${u.uuid}/mfa/passkeys/${u.passkey}`;
      const bare = await t.request("DELETE", path, { token: u.token });
      expect([bare.status, bare.json.details.code.constraint_id]).toEqual([400, "required"]);
      expect((await t.request("DELETE", path, { token: u.token, body: {} })).status).toBe(400);
      expect(await methods(t, u.token, u.uuid)).toContain("passkey");
      expect((await t.request("DELETE", path, { token: u.token, body: { code: u.codes[0] } })).status).toBe(204);
      expect(await methods(t, u.token, u.uuid)).not.toContain("passkey");
    });

    test("every passkey by the own uuid: 400 without a proof, kept; 204 with a code", async () => {
      const t = get();
      const u = await enrolled(t);
      const path = `/0.1/users/${u.uuid}/mfa/passkeys`;
      expect((await t.request("DELETE", path, { token: u.token })).status).toBe(400);
      expect(await methods(t, u.token, u.uuid)).toContain("passkey");
      expect((await t.request("DELETE", path, { token: u.token, body: { code: u.codes[1] } })).status).toBe(204);
      expect(await methods(t, u.token, u.uuid)).not.toContain("passkey");
    });

    test("an administrator acting on its own user by uuid is that user: a proof is needed", async () => {
      const t = get();
      const admin = await enrolled(t, { acl: ["#"] });
      expect((await t.request("DELETE", `/0.1/users/${admin.uuid}/mfa/totp`, { token: admin.token })).status).toBe(400);
      expect(
        (await t.request("DELETE", `/0.1/users/${admin.uuid}/mfa/passkeys/${admin.passkey}`, { token: admin.token }))
          .status,
      ).toBe(400);
      expect(await methods(t, admin.token, admin.uuid)).toEqual(["totp", "recovery_code", "passkey"]);
    });

    test("an administrator resets another user of its tenant without a proof (no body at all), as before", async () => {
      const t = get();
      const family = await tenantFamily(t.app);
      const u = await enrolled(t, { tenantUuid: family.tenant });
      const reset = (path: string) => t.request("DELETE", path, { token: family.admin, tenant: family.tenant });
      expect((await reset(`/0.1/users/${u.uuid}/mfa/passkeys/${u.passkey}`)).status).toBe(204);
      expect((await reset(`/0.1/users/${u.uuid}/mfa/totp`)).status).toBe(204);
      expect(await methods(t, family.admin, u.uuid)).toEqual([]);
      // and never one of another tenant (204: absent or unseen, D4), whose factors stay
      const other = await enrolled(t, { tenantUuid: family.sibling });
      expect((await reset(`/0.1/users/${other.uuid}/mfa/totp`)).status).toBe(204);
      expect((await reset(`/0.1/users/${other.uuid}/mfa/passkeys`)).status).toBe(204);
      expect(await methods(t, family.siblingAdmin, other.uuid)).toEqual(["totp", "recovery_code", "passkey"]);
    });

    test("the next login still asks the second factor after the refused removals", async () => {
      const t = get();
      const username = `self-${crypto.randomUUID().slice(0, 8)}`;
      const uuid = await createUserRow(t.app, { username, password: "pw" });
      const { token } = await tokenFor(t.app, { acl: SELF_SERVICE, userUuid: uuid });
      const started = await t.request("POST", "/0.1/users/me/mfa/totp", { token });
      const code = currentCode(started.json.secret);
      expect((await t.request("POST", "/0.1/users/me/mfa/totp/confirm", { token, body: { code } })).status).toBe(200);
      expect((await t.request("DELETE", `/0.1/users/${uuid}/mfa/totp`, { token })).status).toBe(400);
      const login = await t.request("POST", "/0.1/token", {
        body: {},
        headers: { Authorization: `Basic ${btoa(`${username}:pw`)}` },
      });
      expect([login.status, login.json.error_id]).toEqual([401, "mfa-required"]);
    });
  },
  WITH_MFA_KEY,
);

describeEachDb("the other self-service routes by the own uuid", (get) => {
  test("password: the old password is asked by the own uuid as from anyone (400 without, 401 wrong)", async () => {
    const t = get();
    const uuid = await createUserRow(t.app, { password: "old-secret" });
    const { token } = await tokenFor(t.app, { acl: ["auth.users.me.password.update"], userUuid: uuid });
    const path = `/0.1/users/${uuid}/password`;
    expect((await t.request("PUT", path, { token, body: { new_password: "new-secret" } })).status).toBe(400);
    const wrong = { old_password: "nope", new_password: "new-secret" };
    expect((await t.request("PUT", path, { token, body: wrong })).status).toBe(401);
    const right = { old_password: "old-secret", new_password: "new-secret" };
    expect((await t.request("PUT", path, { token, body: right })).status).toBe(204);
  });

  test("emails: the own uuid replaces its addresses unconfirmed (never `confirmed`), the admin form stays refused", async () => {
    const t = get();
    const uuid = await createUserRow(t.app);
    const { token } = await tokenFor(t.app, { acl: SELF_SERVICE, userUuid: uuid });
    const address = `${crypto.randomUUID().slice(0, 8)}@example.com`;
    const body = { emails: [{ address, main: true, confirmed: true }] };
    expect((await t.request("PUT", `/0.1/users/${uuid}/emails`, { token, body })).status).toBe(204);
    const admin = (await tokenFor(t.app, { acl: ["#"] })).token;
    expect((await t.request("GET", `/0.1/users/${uuid}`, { token: admin })).json.emails).toMatchObject([
      { address, main: true, confirmed: false },
    ]);
    expect((await t.request("PUT", `/0.1/admin/users/${uuid}/emails`, { token, body })).status).toBe(403);
  });

  test("sessions and refresh tokens: the own uuid lists and ends only its own, as `me` does", async () => {
    const t = get();
    const uuid = await createUserRow(t.app);
    const mine = await tokenFor(t.app, { acl: SELF_SERVICE, userUuid: uuid });
    const other = await tokenFor(t.app, { acl: [] });
    const sessions = await t.request("GET", `/0.1/users/${uuid}/sessions`, { token: mine.token });
    expect(sessions.json.items.map((s: { uuid: string }) => s.uuid)).toEqual([mine.sessionUuid]);
    // another user's session named under the own uuid: not this user's, left alone
    const foreign = `/0.1/users/${uuid}/sessions/${other.sessionUuid}`;
    expect((await t.request("DELETE", foreign, { token: mine.token })).status).toBe(204);
    const admin = (await tokenFor(t.app, { acl: ["#"] })).token;
    const left = await t.request("GET", `/0.1/users/${other.userUuid}/sessions`, { token: admin });
    expect(left.json.items.map((s: { uuid: string }) => s.uuid)).toEqual([other.sessionUuid]);
    // another user's sessions are not reachable through the own ACL
    expect((await t.request("GET", `/0.1/users/${other.userUuid}/sessions`, { token: mine.token })).status).toBe(403);
    expect((await t.request("GET", "/0.1/users/me/tokens", { token: mine.token })).json).toEqual(
      (await t.request("GET", `/0.1/users/${uuid}/tokens`, { token: mine.token })).json,
    );
  });
});
