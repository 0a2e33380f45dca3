// WebAuthn §7.2 step 6, the user handle of an assertion: passwordless (no user identified before the
// ceremony), it must be present and name the credential's owner; with a user identified first (the
// second factor), the credential must be that user's and a user handle, when present, theirs too.
// A signed assertion whose handle names someone else is refused either way.
import { expect, test } from "bun:test";
import { relyingParty, startPasskeyAuthentication, verifyPasskeyAssertion } from "../../src/services/auth/webauthn.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { softAuthenticator } from "../helpers/soft-authenticator.ts";

const ORIGIN = "http://localhost";

async function userWithPasskey(t: TestApp) {
  const uuid = await createUserRow(t.app, { username: `uh-${crypto.randomUUID().slice(0, 8)}`, password: "pw" });
  const { token } = await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: uuid });
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
  return { uuid, key };
}

const handleOf = (uuid: string) => Buffer.from(uuid, "utf8").toString("base64url");

describeEachDb("passkeys: the user handle (WebAuthn §7.2 step 6)", (get) => {
  test("passwordless: the handle must be present and name the credential's owner", async () => {
    const t = get();
    const rp = relyingParty(t.app, ORIGIN);
    const alice = await userWithPasskey(t);
    const bob = await userWithPasskey(t);
    const attempt = async () => {
      const started = await startPasskeyAuthentication(t.app, rp, null);
      return verifyPasskeyAssertion(t.app, rp, started.challenge_id, bob.key.assert(started.options, ORIGIN), null);
    };
    // The authenticator returns the handle registration gave it: the owner's uuid.
    expect(bob.key.userHandle).toBe(handleOf(bob.uuid));
    expect((await attempt())?.userUuid).toBe(bob.uuid);
    // Bob's key, signed, claiming Alice: refused (and never signs in as either).
    bob.key.userHandle = handleOf(alice.uuid);
    expect(await attempt()).toBeNull();
    bob.key.userHandle = "not base64url!";
    expect(await attempt()).toBeNull();
    // No handle at all: no user was identified, so none to check against — refused.
    bob.key.userHandle = null;
    expect(await attempt()).toBeNull();
  });

  test("a user identified first: their own credential, and a handle, when present, theirs", async () => {
    const t = get();
    const rp = relyingParty(t.app, ORIGIN);
    const alice = await userWithPasskey(t);
    const bob = await userWithPasskey(t);
    const attempt = async (userUuid: string, key = bob.key) => {
      const started = await startPasskeyAuthentication(t.app, rp, userUuid);
      return verifyPasskeyAssertion(t.app, rp, started.challenge_id, key.assert(started.options, ORIGIN), userUuid);
    };
    expect((await attempt(bob.uuid))?.userUuid).toBe(bob.uuid);
    // A handle is optional when the user was identified before the ceremony.
    bob.key.userHandle = null;
    expect((await attempt(bob.uuid))?.userUuid).toBe(bob.uuid);
    // Bob's own credential with a handle naming Alice: refused.
    bob.key.userHandle = handleOf(alice.uuid);
    expect(await attempt(bob.uuid)).toBeNull();
    // Alice's credential for Bob's sign-in, whatever handle it claims: refused.
    alice.key.userHandle = handleOf(bob.uuid);
    expect(await attempt(bob.uuid, alice.key)).toBeNull();
  });
});
