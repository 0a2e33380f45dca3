// The per-account second-factor lock (NIST SP 800-63B §5.2.2): an attacker holding the password
// and many client addresses gets `max_second_factor_failures` wrong codes in all, whatever the
// addresses and whichever path it guesses through (POST /0.1/token's mfa_code, the `me` removal
// that the hosted page's step shares its check with); the lock refuses the right code too, says so,
// lives in the shared database, and an administrator's unlock ends it. A right code resets the count.
import { expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { loginThrottle } from "../../src/db/schema.ts";
import { currentCode } from "../../src/services/auth/totp.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { hiddenFieldsOf, mergeCookies } from "../helpers/oidc.ts";

const LIMIT = 4;
const STEP = 30_000;
const basic = (login: string, password: string) => `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`;
let seq = 0;
const freshAddress = () => `198.51.100.${++seq}`;
/** The code of the next step (accepted in the ±1 window, and never the one enrolment used). */
const nextCode = (secret: string) => currentCode(secret, Date.now() + STEP);

/** Time-sensitive assertions start at least 5 s before a step boundary (else wait for the next step). */
async function awayFromStepEdge(): Promise<void> {
  const left = STEP - (Date.now() % STEP);
  if (left < 5_000) await Bun.sleep(left + 100);
}
/** A six-digit code valid at no step of the ±1 window. */
function wrongCodeFor(secret: string): string {
  const valid = new Set([-1, 0, 1].map((o) => currentCode(secret, Date.now() + o * STEP)));
  return ["000000", "111111", "222222", "333333"].find((c) => !valid.has(c))!;
}

async function enrolled(t: TestApp, tenantUuid: string) {
  const username = `sfl-${crypto.randomUUID().slice(0, 8)}`;
  const uuid = await createUserRow(t.app, { username, password: "pw-secret", tenantUuid });
  const token = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: uuid, tenantUuid })).token;
  const started = await t.request("POST", "/0.1/users/me/mfa/totp", { token });
  await awayFromStepEdge();
  const confirmed = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
    token,
    body: { code: currentCode(started.json.secret) },
  });
  expect(confirmed.status).toBe(200);
  return { uuid, username, token, secret: started.json.secret as string };
}

const tokenLogin = (t: TestApp, username: string, mfaCode: string, addr = freshAddress()) =>
  t.request("POST", "/0.1/token", {
    body: { mfa_code: mfaCode },
    remoteAddr: addr,
    headers: { Authorization: basic(username, "pw-secret") },
  });

describeEachDb(
  "the second factor locks per account, whatever the addresses",
  (get) => {
    test("wrong codes from as many addresses as guesses lock the account's second factor; the right code is refused, saying why; an administrator unlocks", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const u = await enrolled(t, tenant);
      for (let i = 0; i < LIMIT; i++)
        expect((await tokenLogin(t, u.username, wrongCodeFor(u.secret))).status).toBe(401);
      await awayFromStepEdge();
      // A fresh address, the right password and the right code: still refused while the lock lasts.
      const locked = await tokenLogin(t, u.username, nextCode(u.secret));
      expect(locked.status).toBe(429);
      expect(locked.json.error_id).toBe("second-factor-locked");
      expect(locked.json.message).toContain("administrator");
      expect(Number(locked.headers.get("Retry-After"))).toBeGreaterThan(3000);
      // Recovery codes are second factors too: the `me` removal (the hosted step's check) is refused alike.
      const removal = await t.request("DELETE", "/0.1/users/me/mfa/totp", {
        token: u.token,
        body: { code: nextCode(u.secret) },
      });
      expect([removal.status, removal.json.error_id]).toEqual([429, "second-factor-locked"]);
      // The lock is a row of the shared database (every instance reads it), not a process's memory.
      const [row] = await t.app.db
        .select()
        .from(loginThrottle)
        .where(and(eq(loginThrottle.kind, "second_factor"), eq(loginThrottle.key, u.uuid)));
      expect(row?.failures).toBe(LIMIT);
      expect(row!.lockedUntil!.getTime()).toBeGreaterThan(Date.now());

      const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      expect((await t.request("DELETE", `/0.1/users/${u.uuid}/login-failures`, { token: admin })).status).toBe(204);
      await awayFromStepEdge();
      expect((await tokenLogin(t, u.username, nextCode(u.secret))).status).toBe(200);
    });

    test("the `me` path counts too, and the failures must be consecutive: a right code starts the count again", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const u = await enrolled(t, tenant);
      const removeWith = (code: string) =>
        t.request("DELETE", "/0.1/users/me/mfa/totp", { token: u.token, body: { code }, remoteAddr: freshAddress() });
      for (let i = 0; i < LIMIT - 1; i++) expect((await removeWith(wrongCodeFor(u.secret))).status).toBe(400);
      await awayFromStepEdge();
      expect((await tokenLogin(t, u.username, nextCode(u.secret))).status).toBe(200);
      for (let i = 0; i < LIMIT - 1; i++)
        expect((await tokenLogin(t, u.username, wrongCodeFor(u.secret))).status).toBe(401);
      // LIMIT - 1 since the right code: not locked; one more wrong code (on the `me` path) locks.
      expect((await removeWith(wrongCodeFor(u.secret))).status).toBe(400);
      const r = await tokenLogin(t, u.username, wrongCodeFor(u.secret));
      expect([r.status, r.json.error_id]).toEqual([429, "second-factor-locked"]);
    });

    test("the hosted page's second step: wrong codes from several browsers and addresses lock it; the step says so", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const u = await enrolled(t, tenant);
      const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const client = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: { name: "RP", client_type: "confidential", redirect_uris: ["https://rp.sfl.test/cb"], first_party: true },
      });
      const authorize = `/0.1/oidc/authorize?${new URLSearchParams({
        client_id: client.json.client_id,
        redirect_uri: "https://rp.sfl.test/cb",
        response_type: "code",
        scope: "openid",
      })}`;
      const form = (cookie: string, fields: Record<string, string>, path: string, remoteAddr: string) =>
        t.request("POST", path, {
          rawBody: new URLSearchParams(fields).toString(),
          headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: cookie },
          remoteAddr,
        });
      /** A new browser, from a new address, through the password to the second step. */
      const step = async () => {
        const addr = freshAddress();
        const page = await t.request("GET", authorize, { remoteAddr: addr });
        const cookie = mergeCookies("", new Response(null, { headers: page.headers }));
        const fields = { ...hiddenFieldsOf(page.text), username: u.username, password: "pw-secret" };
        const second = await form(cookie, fields, "/0.1/oidc/authorize", addr);
        expect(second.status).toBe(200);
        return (code: string) =>
          form(cookie, { ...hiddenFieldsOf(second.text), code }, "/0.1/oidc/authorize-mfa", addr);
      };
      for (let i = 0; i < LIMIT; i++) expect((await (await step())(wrongCodeFor(u.secret))).status).toBe(401);
      await awayFromStepEdge();
      const locked = await (await step())(nextCode(u.secret));
      expect(locked.status).toBe(429);
      expect(locked.text).toContain("the second factor of this account is locked");
    });
  },
  {
    config: {
      password_hash_iterations: 1000,
      mfa: { encryption_keys: [{ id: "k", key: Buffer.alloc(32, 9).toString("base64") }] },
      login_throttling: { max_second_factor_failures: LIMIT },
    },
  },
);
