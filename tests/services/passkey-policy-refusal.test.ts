// Passwordless sign-in with a valid passkey that the tenant's policy refuses (passwordless not
// allowed for the user's tenant) is not a guess at the user's second factor: however often it is
// tried, it never counts toward the account's second-factor lock (docs/security.md, Login
// throttling). Wrong passkey assertions at the second step after the password still lock it.
import { expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { loginThrottle } from "../../src/db/schema.ts";
import { AuthenticationFailed, SecondFactorLocked } from "../../src/domain/errors.ts";
import { assertSecondFactorOpen, SECOND_FACTOR_KIND } from "../../src/services/auth/second-factor-lock.ts";
import { relyingParty, startPasskeyAuthentication } from "../../src/services/auth/webauthn.ts";
import {
  loadPending,
  passwordlessProof,
  startPendingSignIn,
  verifyPasskey,
} from "../../src/services/oidc/mfa-sign-in.ts";
// (Rejections are awaited with .then(), not expect().rejects: on PGlite, whose engine answers from a
// worker thread, bun's expect().rejects left the first query of the call unanswered.)
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { softAuthenticator } from "../helpers/soft-authenticator.ts";

const LIMIT = 3;
const ORIGIN = "http://localhost";
let seq = 0;
const origin = () => ({ userAgent: "tests", remoteAddr: `203.0.113.${++seq}`, forwarded: false });

async function userWithPasskey(t: TestApp, tenantUuid: string) {
  const username = `pk-${crypto.randomUUID().slice(0, 8)}`;
  const uuid = await createUserRow(t.app, { username, password: "pw-secret", tenantUuid });
  const { token } = await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: uuid, tenantUuid });
  const key = softAuthenticator();
  const started = await t.request("POST", "/0.1/users/me/mfa/passkeys/registration", { token });
  const done = await t.request("POST", "/0.1/users/me/mfa/passkeys", {
    token,
    body: {
      challenge_id: started.json.challenge_id,
      name: "Key",
      credential: key.register(started.json.options, ORIGIN),
    },
  });
  expect(done.status).toBe(201);
  return { uuid, username, key };
}

const secondFactorRow = async (t: TestApp, userUuid: string) =>
  (
    await t.app.db
      .select()
      .from(loginThrottle)
      .where(and(eq(loginThrottle.kind, SECOND_FACTOR_KIND), eq(loginThrottle.key, userUuid)))
  )[0];

describeEachDb(
  "passkey sign-in: a policy refusal is not a guess",
  (get) => {
    test("a valid passkey refused by the tenant's policy, many times over, never locks the second factor", async () => {
      const t = get();
      const rp = relyingParty(t.app, ORIGIN);
      const tenant = t.app.topTenantUuid; // passwordless is off by default
      const u = await userWithPasskey(t, tenant);
      for (let i = 0; i < LIMIT * 3; i++) {
        const started = await startPasskeyAuthentication(t.app, rp, null);
        const attempt = passwordlessProof(
          t.app,
          rp,
          started.challenge_id,
          u.key.assert(started.options, ORIGIN),
          origin(),
        );
        expect(
          await attempt.then(
            () => null,
            (e: unknown) => e,
          ),
        ).toBeInstanceOf(AuthenticationFailed);
      }
      expect(await secondFactorRow(t, u.uuid)).toBeUndefined();
      expect(await assertSecondFactorOpen(t.app, u.uuid, "mfa")).toEqual({ failures: false });
    });

    test("wrong assertions at the second step still lock it", async () => {
      const t = get();
      const rp = relyingParty(t.app, ORIGIN);
      const tenant = await createTenantRow(t.app);
      const alice = await userWithPasskey(t, tenant);
      const mallory = await userWithPasskey(t, tenant);
      const proven = { userUuid: alice.uuid, login: alice.username, method: "native", backendName: "wazo_user" };
      for (let i = 0; i < LIMIT; i++) {
        // A fresh pending sign-in (the password given again) and address each time: the lock is per account.
        const binding = { browser: `browser-${i}`, clientId: null };
        const handle = await startPendingSignIn(t.app, proven, "verify", binding);
        const pending = (await loadPending(t.app, handle, binding))!;
        const started = await startPasskeyAuthentication(t.app, rp, alice.uuid);
        // Another user's key: an assertion that is not Alice's.
        const wrong = mallory.key.assert(started.options, ORIGIN);
        expect(await verifyPasskey(t.app, pending, rp, started.challenge_id, wrong, origin())).toBeNull();
      }
      expect((await secondFactorRow(t, alice.uuid))?.failures).toBe(LIMIT);
      const locked = await assertSecondFactorOpen(t.app, alice.uuid, "mfa").then(
        () => null,
        (e: unknown) => e,
      );
      expect(locked).toBeInstanceOf(SecondFactorLocked);
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
