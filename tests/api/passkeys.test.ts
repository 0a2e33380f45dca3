// Passkeys through the API (issue 25): registration through `me` with a software authenticator
// (tests/helpers/soft-authenticator.ts), list, rename, removal by the user and by administrators of
// the user's tenant (never another tenant's), challenges used once, the relying party taken from
// `public_url`, events, and the login: a passkey counts as a factor (mfa-required lists it), while
// a user without any factor logs in as before. The ceremonies in a browser: tests/web/mfa-browser.test.ts.
import { expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { passkeys, pendingSignIns, webauthnChallenges } from "../../src/db/schema.ts";
import { runCleanup } from "../../src/boot/jobs.ts";
import { listRecordedEvents } from "../../src/services/events.ts";
import { relyingParty, startPasskeyAuthentication, verifyPasskeyAssertion } from "../../src/services/auth/webauthn.ts";
import { renderMetrics } from "../../src/observe/metrics.ts";
import { createTestApp, describeEachDb, type TestApp } from "../helpers/app.ts";
import { createUserRow, tenantFamily, tokenFor } from "../helpers/fixtures.ts";
import { softAuthenticator, type SoftAuthenticator } from "../helpers/soft-authenticator.ts";

const ORIGIN = "http://localhost";
const basic = (login: string, password: string) => `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`;

async function selfToken(t: TestApp, userUuid: string, tenantUuid?: string): Promise<string> {
  return (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid, tenantUuid })).token;
}

/** Registers a passkey through `me`; answers the finishing request. */
async function register(t: TestApp, token: string, key: SoftAuthenticator, name = "Laptop", origin = ORIGIN) {
  const started = await t.request("POST", "/0.1/users/me/mfa/passkeys/registration", { token });
  expect(started.status).toBe(201);
  return t.request("POST", "/0.1/users/me/mfa/passkeys", {
    token,
    body: { challenge_id: started.json.challenge_id, name, credential: key.register(started.json.options, origin) },
  });
}

async function userWithPasskey(t: TestApp, tenantUuid?: string) {
  const username = `pk-${crypto.randomUUID().slice(0, 8)}`;
  const uuid = await createUserRow(t.app, { username, password: "pw-secret", tenantUuid });
  const token = await selfToken(t, uuid, tenantUuid);
  const key = softAuthenticator();
  const r = await register(t, token, key);
  expect(r.status).toBe(201);
  return { uuid, username, token, key, passkey: r.json };
}

/** The HTTP status of the error a service call throws (bun's `rejects` matcher hangs on these errors). */
async function statusOf(p: Promise<unknown>): Promise<number | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return (e as { status?: number }).status ?? null;
  }
}

describeEachDb(
  "passkeys",
  (get) => {
    test("registration through me: options for a discoverable credential, the passkey stored with its flags, listed, an event", async () => {
      const t = get();
      const uuid = await createUserRow(t.app, { username: "pk-reg", password: "pw" });
      const token = await selfToken(t, uuid);
      expect((await t.request("GET", "/0.1/users/me/mfa/passkeys", { token })).json).toEqual({ items: [], total: 0 });
      const started = await t.request("POST", "/0.1/users/me/mfa/passkeys/registration", { token });
      expect(started.status).toBe(201);
      expect(started.json.challenge_id).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(started.json.options.rp).toEqual({ name: "Tessera", id: "localhost" });
      expect(started.json.options.user.name).toBe("pk-reg");
      expect(started.json.options.authenticatorSelection).toMatchObject({ residentKey: "required" });
      const key = softAuthenticator({ backupEligible: true });
      const done = await t.request("POST", "/0.1/users/me/mfa/passkeys", {
        token,
        body: {
          challenge_id: started.json.challenge_id,
          name: "Phone",
          credential: key.register(started.json.options, ORIGIN),
        },
      });
      expect(done.status).toBe(201);
      expect(done.json).toMatchObject({
        name: "Phone",
        backup_eligible: true,
        backed_up: true,
        transports: ["internal"],
        last_used_at: null,
      });
      expect(done.text).not.toContain("public");
      const [row] = await t.app.db.select().from(passkeys).where(eq(passkeys.userUuid, uuid));
      expect(row!.credentialId).toBe(key.credentialId);
      const list = (await t.request("GET", "/0.1/users/me/mfa/passkeys", { token })).json;
      expect(list.total).toBe(1);
      expect(list.items[0].uuid).toBe(done.json.uuid);
      const status = (await t.request("GET", "/0.1/users/me/mfa", { token })).json;
      expect(status.passkeys).toBe(1);
      expect(status.methods).toEqual(["passkey"]);
      const events = (await listRecordedEvents(t.app.db)).filter((e) => e.name === "auth_user_mfa_enrolled");
      expect(events.at(-1)?.payload.data).toEqual({
        user_uuid: uuid,
        tenant_uuid: t.app.topTenantUuid,
        method: "passkey",
      });
      // The same authenticator again: excluded by the options, refused by the server.
      const again = await t.request("POST", "/0.1/users/me/mfa/passkeys/registration", { token });
      expect(again.json.options.excludeCredentials).toEqual([
        { id: key.credentialId, type: "public-key", transports: ["internal"] },
      ]);
      const dup = await t.request("POST", "/0.1/users/me/mfa/passkeys", {
        token,
        body: {
          challenge_id: again.json.challenge_id,
          name: "Dup",
          credential: key.register(again.json.options, ORIGIN),
        },
      });
      expect(dup.status).toBe(400);
      expect(dup.json.details.credential.constraint_id).toBe("unique");
    });

    test("registration errors: a challenge is used once, another user's challenge, wrong origin, invalid body — 400, nothing stored", async () => {
      const t = get();
      const uuid = await createUserRow(t.app, { password: "pw" });
      const token = await selfToken(t, uuid);
      const started = await t.request("POST", "/0.1/users/me/mfa/passkeys/registration", { token });
      const key = softAuthenticator();
      const credential = key.register(started.json.options, ORIGIN);
      const wrongOrigin = await t.request("POST", "/0.1/users/me/mfa/passkeys", {
        token,
        body: {
          challenge_id: started.json.challenge_id,
          name: "X",
          credential: key.register(started.json.options, "https://evil.test"),
        },
      });
      expect(wrongOrigin.status).toBe(400);
      expect(wrongOrigin.json.details.credential.constraint_id).toBe("webauthn");
      // The failed attempt spent the challenge: replaying it with a good response is refused.
      const replay = await t.request("POST", "/0.1/users/me/mfa/passkeys", {
        token,
        body: { challenge_id: started.json.challenge_id, name: "X", credential },
      });
      expect(replay.status).toBe(400);
      expect(replay.json.details.challenge_id.message).toBe("Unknown, expired or already used challenge");
      // Another user's challenge.
      const other = await selfToken(t, await createUserRow(t.app, { password: "pw" }));
      const theirs = await t.request("POST", "/0.1/users/me/mfa/passkeys/registration", { token: other });
      const stolen = await t.request("POST", "/0.1/users/me/mfa/passkeys", {
        token,
        body: {
          challenge_id: theirs.json.challenge_id,
          name: "X",
          credential: key.register(theirs.json.options, ORIGIN),
        },
      });
      expect(stolen.status).toBe(400);
      for (const body of [
        {},
        { challenge_id: "x", name: "", credential: {} },
        { challenge_id: "x", name: "a".repeat(65), credential: {} },
      ]) {
        const bad = await t.request("POST", "/0.1/users/me/mfa/passkeys", { token, body });
        expect(bad.status).toBe(400);
        expect(bad.json.error_id).toBe("invalid-data");
      }
      const garbage = await t.request("POST", "/0.1/users/me/mfa/passkeys/registration", { token });
      const g = await t.request("POST", "/0.1/users/me/mfa/passkeys", {
        token,
        body: { challenge_id: garbage.json.challenge_id, name: "X", credential: { id: "x", response: {} } },
      });
      expect(g.status).toBe(400);
      expect((await t.request("GET", "/0.1/users/me/mfa/passkeys", { token })).json.total).toBe(0);
      // No ACL.
      const none = (await tokenFor(t.app, { acl: [], userUuid: uuid })).token;
      expect((await t.request("POST", "/0.1/users/me/mfa/passkeys/registration", { token: none })).status).toBe(403);
    });

    test("rename (by its own uuid) and remove through me; another user's passkey: 404 under one's own uuid, 403 under theirs, removal a no-op", async () => {
      const t = get();
      const a = await userWithPasskey(t);
      const b = await userWithPasskey(t);
      // A user renames its own passkeys by its uuid (its `auth.users.me.mfa.#` covers it).
      const renamed = await t.request("PUT", `/0.1/users/${a.uuid}/mfa/passkeys/${a.passkey.uuid}`, {
        token: a.token,
        body: { name: "Work laptop" },
      });
      expect(renamed.status).toBe(204);
      expect((await t.request("GET", "/0.1/users/me/mfa/passkeys", { token: a.token })).json.items[0].name).toBe(
        "Work laptop",
      );
      expect(
        (
          await t.request("PUT", `/0.1/users/${a.uuid}/mfa/passkeys/${b.passkey.uuid}`, {
            token: a.token,
            body: { name: "Mine" },
          })
        ).status,
      ).toBe(404);
      expect(
        (
          await t.request("PUT", `/0.1/users/${b.uuid}/mfa/passkeys/${b.passkey.uuid}`, {
            token: a.token,
            body: { name: "Mine" },
          })
        ).status,
      ).toBe(403);
      expect(
        (
          await t.request("PUT", `/0.1/users/${a.uuid}/mfa/passkeys/${a.passkey.uuid}`, {
            token: a.token,
            body: { name: "" },
          })
        ).status,
      ).toBe(400);
      // Removal through `me` needs proof of a factor (as TOTP removal does): a fresh passkey assertion.
      const assertionFor = async (u: typeof a) => {
        const started = await t.request("POST", "/0.1/users/me/mfa/passkeys/assertion", { token: u.token });
        expect(started.status).toBe(201);
        expect(started.json.options.allowCredentials.map((c: { id: string }) => c.id)).toEqual([u.key.credentialId]);
        return { challenge_id: started.json.challenge_id, credential: u.key.assert(started.json.options, ORIGIN) };
      };
      expect(
        (
          await t.request("DELETE", `/0.1/users/me/mfa/passkeys/${b.passkey.uuid}`, {
            token: a.token,
            body: await assertionFor(a),
          })
        ).status,
      ).toBe(204);
      expect((await t.request("GET", "/0.1/users/me/mfa/passkeys", { token: b.token })).json.total).toBe(1);
      // No proof, a wrong code (a failed login), another user's assertion: 400, nothing removed.
      const mine = `/0.1/users/me/mfa/passkeys/${a.passkey.uuid}`;
      const noProof = await t.request("DELETE", mine, { token: a.token, body: {} });
      expect([noProof.status, Object.keys(noProof.json.details)]).toEqual([400, ["code"]]);
      expect((await t.request("DELETE", mine, { token: a.token, body: { code: "123456" } })).status).toBe(400);
      const forA = await t.request("POST", "/0.1/users/me/mfa/passkeys/assertion", { token: a.token });
      const theirs = { challenge_id: forA.json.challenge_id, credential: b.key.assert(forA.json.options, ORIGIN) };
      expect((await t.request("DELETE", mine, { token: a.token, body: theirs })).status).toBe(400);
      const failed = (await listRecordedEvents(t.app.db)).filter(
        (e) => e.name === "auth_user_mfa_failed" && e.payload.data.user_uuid === a.uuid,
      );
      expect(failed.length).toBe(2);
      expect((await t.request("GET", "/0.1/users/me/mfa/passkeys", { token: a.token })).json.total).toBe(1);
      expect((await t.request("DELETE", mine, { token: a.token, body: await assertionFor(a) })).status).toBe(204);
      expect((await t.request("GET", "/0.1/users/me/mfa/passkeys", { token: a.token })).json.total).toBe(0);
      // Nothing left to prove: a no-op without proof.
      expect((await t.request("DELETE", mine, { token: a.token, body: {} })).status).toBe(204);
      const removed = (await listRecordedEvents(t.app.db)).filter(
        (e) => e.name === "auth_user_mfa_removed" && e.payload.data.user_uuid === a.uuid,
      );
      expect(removed.at(-1)?.payload.data.method).toBe("passkey");
    });

    test("administrators: list, rename and remove a user's passkeys in their tenant; another tenant's admin sees and changes nothing", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      const u = await userWithPasskey(t, fam.child);
      const path = `/0.1/users/${u.uuid}/mfa/passkeys`;
      expect((await t.request("GET", path, { token: fam.admin })).json.total).toBe(1);
      expect((await t.request("GET", path, { token: fam.siblingAdmin })).status).toBe(404);
      expect(
        (await t.request("PUT", `${path}/${u.passkey.uuid}`, { token: fam.siblingAdmin, body: { name: "Pwned" } }))
          .status,
      ).toBe(404);
      expect((await t.request("DELETE", `${path}/${u.passkey.uuid}`, { token: fam.siblingAdmin })).status).toBe(204);
      expect((await t.request("DELETE", path, { token: fam.siblingAdmin })).status).toBe(204);
      const still = (await t.request("GET", path, { token: fam.childAdmin })).json;
      expect(still.items.map((p: { name: string }) => p.name)).toEqual(["Laptop"]);
      const renamed = await t.request("PUT", `${path}/${u.passkey.uuid}`, {
        token: fam.childAdmin,
        body: { name: "Desk" },
      });
      expect(renamed.status).toBe(204);
      expect((await t.request("GET", path, { token: fam.childAdmin })).json.items[0].name).toBe("Desk");
      expect(
        (await t.request("PUT", `${path}/${crypto.randomUUID()}`, { token: fam.childAdmin, body: { name: "x" } }))
          .status,
      ).toBe(404);
      expect(
        (await t.request("GET", `/0.1/users/${crypto.randomUUID()}/mfa/passkeys`, { token: fam.admin })).status,
      ).toBe(404);
      // A user's own token is no administrator of others.
      const other = await userWithPasskey(t, fam.child);
      expect((await t.request("GET", `/0.1/users/${other.uuid}/mfa/passkeys`, { token: u.token })).status).toBe(403);
      expect((await t.request("DELETE", path, { token: fam.admin })).status).toBe(204);
      expect((await t.request("GET", path, { token: fam.admin })).json.total).toBe(0);
    });

    test("login: a passkey is a factor — mfa-required lists it and creates nothing; a user without a factor logs in as before", async () => {
      const t = get();
      const u = await userWithPasskey(t);
      const r = await t.request("POST", "/0.1/token", {
        headers: { Authorization: basic(u.username, "pw-secret") },
        body: {},
      });
      expect(r.status).toBe(401);
      expect(r.json.error_id).toBe("mfa-required");
      expect(r.json.details).toEqual({ methods: ["passkey"] });
      // Only a passkey: no code opens the login through the API.
      const coded = await t.request("POST", "/0.1/token", {
        headers: { Authorization: basic(u.username, "pw-secret") },
        body: { mfa_code: "123456" },
      });
      expect(coded.status).toBe(401);
      expect(coded.json.error_id).toBe("authentication-failed");
      await createUserRow(t.app, { username: "pk-none", password: "pw" });
      const plain = await t.request("POST", "/0.1/token", {
        headers: { Authorization: basic("pk-none", "pw") },
        body: { access_type: "offline", client_id: "pk-app" },
      });
      expect(plain.status).toBe(200);
      expect(plain.json.data.auth_id).toBeDefined();
      // a full login, not an enrol-only one (which never gets a refresh token)
      expect(plain.json.data.refresh_token).toBeString();
    });

    test("assertion: single-use challenge, counter stored, user verification required when passwordless, other user's credential refused", async () => {
      const t = get();
      const u = await userWithPasskey(t);
      const rp = relyingParty(t.app, ORIGIN);
      const started = await startPasskeyAuthentication(t.app, rp, u.uuid);
      expect(started.options.allowCredentials?.map((c) => c.id)).toEqual([u.key.credentialId]);
      const assertion = u.key.assert(started.options, ORIGIN);
      const ok = await verifyPasskeyAssertion(t.app, rp, started.challenge_id, assertion, u.uuid);
      expect(ok).toEqual({ userUuid: u.uuid, amr: "hwk", userVerified: true });
      const [row] = await t.app.db.select().from(passkeys).where(eq(passkeys.userUuid, u.uuid));
      expect(row!.counter).toBe(1);
      expect(row!.lastUsedAt).not.toBeNull();
      // Replay of the same challenge and response.
      expect(await statusOf(verifyPasskeyAssertion(t.app, rp, started.challenge_id, assertion, u.uuid))).toBe(400);
      // A cloned authenticator: the counter goes backwards.
      const again = await startPasskeyAuthentication(t.app, rp, u.uuid);
      u.key.counter = 0;
      expect(
        await verifyPasskeyAssertion(t.app, rp, again.challenge_id, u.key.assert(again.options, ORIGIN), u.uuid),
      ).toBeNull();
      // Passwordless: no allow list, UV required.
      const other = await userWithPasskey(t);
      const free = await startPasskeyAuthentication(t.app, rp, null);
      expect(free.options.allowCredentials).toBeUndefined();
      expect(free.options.userVerification).toBe("required");
      other.key.userVerified = false;
      expect(
        await verifyPasskeyAssertion(t.app, rp, free.challenge_id, other.key.assert(free.options, ORIGIN), null),
      ).toBeNull();
      other.key.userVerified = true;
      const free2 = await startPasskeyAuthentication(t.app, rp, null);
      expect(
        (await verifyPasskeyAssertion(t.app, rp, free2.challenge_id, other.key.assert(free2.options, ORIGIN), null))
          ?.userUuid,
      ).toBe(other.uuid);
      // Second factor for user u with other's credential: refused.
      const cross = await startPasskeyAuthentication(t.app, rp, u.uuid);
      expect(
        await verifyPasskeyAssertion(t.app, rp, cross.challenge_id, other.key.assert(cross.options, ORIGIN), u.uuid),
      ).toBeNull();
      // A challenge issued for u cannot serve a passwordless sign-in.
      const forU = await startPasskeyAuthentication(t.app, rp, u.uuid);
      expect(
        await statusOf(verifyPasskeyAssertion(t.app, rp, forU.challenge_id, u.key.assert(forU.options, ORIGIN), null)),
      ).toBe(400);
      const { body } = await renderMetrics();
      expect(body).toMatch(/tessera_mfa_total\{outcome="passkey_accepted"\} [1-9]/);
      expect(body).toMatch(/tessera_mfa_total\{outcome="passkey_refused"\} [1-9]/);
    });

    test("the cleanup job purges expired challenges and unfinished second steps, and keeps current ones", async () => {
      const t = get();
      const u = await userWithPasskey(t);
      const rp = relyingParty(t.app, ORIGIN);
      const current = await startPasskeyAuthentication(t.app, rp, u.uuid);
      const past = new Date(Date.now() - 1000);
      await t.app.db.insert(webauthnChallenges).values([
        { handleHash: "a".repeat(64), challenge: "x", purpose: "authentication", userUuid: u.uuid, expiresAt: past },
        { handleHash: "b".repeat(64), challenge: "y", purpose: "registration", userUuid: null, expiresAt: past },
      ]);
      const pending = (handleHash: string, expiresAt: Date) => ({
        handleHash,
        browserHash: "c".repeat(64),
        userUuid: u.uuid,
        login: u.username,
        method: "native",
        backendName: "wazo_user",
        stage: "verify",
        amr: ["pwd"],
        expiresAt,
      });
      await t.app.db
        .insert(pendingSignIns)
        .values([pending("d".repeat(64), past), pending("e".repeat(64), new Date(Date.now() + 60_000))]);
      const { mfaCeremonies } = await runCleanup(t.app);
      expect(mfaCeremonies).toBe(3);
      const left = (await t.app.db.select().from(webauthnChallenges)).map((r) => r.handleHash);
      expect(left).not.toContain("a".repeat(64));
      expect(left).not.toContain("b".repeat(64));
      expect((await t.app.db.select().from(pendingSignIns)).map((r) => r.handleHash)).toEqual(["e".repeat(64)]);
      // The current challenge still works.
      expect(
        await verifyPasskeyAssertion(t.app, rp, current.challenge_id, u.key.assert(current.options, ORIGIN), u.uuid),
      ).not.toBeNull();
    });

    test("audit: a passkey registered, renamed, removed (through me and by an administrator) and reset, the tenant's passwordless setting — never the credential", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      const audit = async (action: string, target: string) => {
        const r = await t.request("GET", `/0.1/audit?recurse=true&action=${action}&target_uuid=${target}`, {
          token: fam.admin,
        });
        expect(r.status).toBe(200);
        return r.json.items as Array<{
          actor: { user_uuid: string | null };
          target: { uuid: string; tenant_uuid: string };
          changes: Array<{ field: string; old: unknown; new: unknown }>;
        }>;
      };
      const a = await userWithPasskey(t, fam.tenant);
      const [stored] = await t.app.db.select().from(passkeys).where(eq(passkeys.uuid, a.passkey.uuid));
      const [registered, ...others] = await audit("mfa.passkey.register", a.uuid);
      expect(others).toEqual([]);
      expect(registered?.actor.user_uuid).toBe(a.uuid);
      expect(registered?.target.tenant_uuid).toBe(fam.tenant);
      expect(registered?.changes).toEqual([
        { field: "uuid", old: null, new: a.passkey.uuid },
        { field: "name", old: null, new: "Laptop" },
      ]);
      const rename = await t.request("PUT", `/0.1/users/${a.uuid}/mfa/passkeys/${a.passkey.uuid}`, {
        token: fam.admin,
        body: { name: "Desk" },
      });
      expect(rename.status).toBe(204);
      expect((await audit("mfa.passkey.rename", a.uuid)).map((e) => e.changes)).toEqual([
        [{ field: "name", old: "Laptop", new: "Desk" }],
      ]);
      // A rename refused (400) records nothing.
      await t.request("PUT", `/0.1/users/${a.uuid}/mfa/passkeys/${a.passkey.uuid}`, {
        token: fam.admin,
        body: { name: "" },
      });
      expect(await audit("mfa.passkey.rename", a.uuid)).toHaveLength(1);
      const second = await register(t, a.token, softAuthenticator(), "Phone");
      expect(second.status).toBe(201);
      expect(
        (await t.request("DELETE", `/0.1/users/${a.uuid}/mfa/passkeys/${second.json.uuid}`, { token: fam.admin }))
          .status,
      ).toBe(204);
      const [removed] = await audit("mfa.passkey.remove", a.uuid);
      expect(removed?.changes).toEqual([
        { field: "uuid", old: second.json.uuid, new: null },
        { field: "name", old: "Phone", new: null },
      ]);
      expect(removed?.actor.user_uuid).not.toBe(a.uuid);
      expect((await t.request("DELETE", `/0.1/users/${a.uuid}/mfa/passkeys`, { token: fam.admin })).status).toBe(204);
      expect((await audit("mfa.passkey.reset", a.uuid)).map((e) => e.changes[1])).toEqual([
        { field: "name", old: "Desk", new: null },
      ]);
      // Nothing left: a reset again is a no-op, and records nothing.
      expect((await t.request("DELETE", `/0.1/users/${a.uuid}/mfa/passkeys`, { token: fam.admin })).status).toBe(204);
      expect(await audit("mfa.passkey.reset", a.uuid)).toHaveLength(1);
      expect(
        (await t.request("PUT", `/0.1/tenants/${fam.tenant}/mfa`, { token: fam.admin, body: { passwordless: true } }))
          .status,
      ).toBe(204);
      expect((await audit("tenant.mfa_policy.update", fam.tenant)).map((e) => e.changes)).toEqual([
        [{ field: "passwordless", old: null, new: true }],
      ]);
      // Never the credential or its public key.
      const trail = JSON.stringify(
        (await t.request("GET", "/0.1/audit?recurse=true&limit=1000", { token: fam.admin })).json,
      );
      expect(trail).toContain("mfa.passkey.register");
      expect(trail).not.toContain(a.key.credentialId);
      expect(trail).not.toContain(stored!.publicKey);
    });

    test("tenant policy: passwordless is off by default, inherited by sub-tenants, kept when only mfa is set", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      const get0 = (await t.request("GET", `/0.1/tenants/${fam.child}/mfa`, { token: fam.childAdmin })).json;
      expect(get0).toEqual({
        mfa: null,
        effective: "optional",
        inherited_from: null,
        passwordless: null,
        passwordless_effective: false,
        passwordless_inherited_from: null,
      });
      expect(
        (
          await t.request("PUT", `/0.1/tenants/${fam.tenant}/mfa`, {
            token: fam.admin,
            body: { mfa: null, passwordless: "yes" },
          })
        ).status,
      ).toBe(400);
      expect(
        (
          await t.request("PUT", `/0.1/tenants/${fam.tenant}/mfa`, {
            token: fam.admin,
            body: { mfa: null, passwordless: true },
          })
        ).status,
      ).toBe(204);
      expect(
        (await t.request("PUT", `/0.1/tenants/${fam.tenant}/mfa`, { token: fam.admin, body: { mfa: "required" } }))
          .status,
      ).toBe(204);
      // Only passwordless in the body: the requirement stays.
      expect(
        (await t.request("PUT", `/0.1/tenants/${fam.tenant}/mfa`, { token: fam.admin, body: { passwordless: true } }))
          .status,
      ).toBe(204);
      expect((await t.request("GET", `/0.1/tenants/${fam.tenant}/mfa`, { token: fam.admin })).json).toMatchObject({
        mfa: "required",
        passwordless: true,
      });
      expect(
        (await t.request("PUT", `/0.1/tenants/${fam.tenant}/mfa`, { token: fam.admin, body: { mfa: null } })).status,
      ).toBe(204);
      expect((await t.request("GET", `/0.1/tenants/${fam.child}/mfa`, { token: fam.childAdmin })).json).toMatchObject({
        passwordless: null,
        passwordless_effective: true,
        passwordless_inherited_from: fam.tenant,
      });
      expect(
        (
          await t.request("PUT", `/0.1/tenants/${fam.child}/mfa`, {
            token: fam.childAdmin,
            body: { mfa: null, passwordless: false },
          })
        ).status,
      ).toBe(204);
      expect((await t.request("GET", `/0.1/tenants/${fam.child}/mfa`, { token: fam.childAdmin })).json).toMatchObject({
        passwordless: false,
        passwordless_effective: false,
      });
      expect(
        (
          await t.request("PUT", `/0.1/tenants/${fam.child}/mfa`, {
            token: fam.siblingAdmin,
            body: { mfa: null, passwordless: true },
          })
        ).status,
      ).toBe(404);
    });
  },
  { config: { mfa: { encryption_keys: [{ id: "test-key", key: Buffer.alloc(32, 7).toString("base64") }] } } },
);

test("the relying party is public_url's host and origin when set; a response made for another origin is refused", async () => {
  const t = await createTestApp("pglite", { config: { public_url: "https://auth.example.test/api/auth" } });
  try {
    const uuid = await createUserRow(t.app, { password: "pw" });
    const token = await selfToken(t, uuid);
    const started = await t.request("POST", "/0.1/users/me/mfa/passkeys/registration", { token });
    expect(started.json.options.rp.id).toBe("auth.example.test");
    const key = softAuthenticator();
    expect((await register(t, token, key, "A", ORIGIN)).status).toBe(400);
    expect((await register(t, token, key, "A", "https://auth.example.test")).status).toBe(201);
  } finally {
    await t.close();
  }
});
