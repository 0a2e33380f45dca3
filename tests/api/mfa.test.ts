// Multi-factor authentication (issue 25): TOTP enrolment through `me` and by administrators, the
// login's second-factor step (mfa_code in the body, or the code appended to the password for
// Basic-only clients), replay, clock skew, recovery codes, throttling of guesses, tenant isolation.
import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq, sql } from "drizzle-orm";
import { mfaTotp } from "../../src/db/schema.ts";
import { listRecordedEvents } from "../../src/services/events.ts";
import { currentCode } from "../../src/services/auth/totp.ts";
import { useSecondFactor } from "../../src/services/auth/mfa.ts";
import { renderMetrics } from "../../src/observe/metrics.ts";
import { execRows } from "../../src/db/index.ts";
import { createTestApp, databaseKinds, describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tenantFamily, tokenFor } from "../helpers/fixtures.ts";

/** What `mfa.self_service` (on by default) adds to every login token of a user of purpose `user`. */
const SELF_SERVICE = "auth.users.me.mfa.#";

export const TEST_MFA_KEY = Buffer.alloc(32, 7).toString("base64");
const basic = (login: string, password: string) => `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`;
const STEP = 30_000;
const code = (secret: string, offsetSteps = 0) => currentCode(secret, Date.now() + offsetSteps * STEP);
const stepNow = () => Math.floor(Date.now() / STEP);
const codeAtStep = (secret: string, step: number) => currentCode(secret, step * STEP);

/** Time-sensitive assertions start at least 5 s before a step boundary (else wait for the next step). */
async function awayFromStepEdge(): Promise<void> {
  const left = STEP - (Date.now() % STEP);
  if (left < 5_000) await Bun.sleep(left + 100);
}
/** A six-digit code valid at no step of the ±1 window. */
function wrongCodeFor(secret: string): string {
  const valid = new Set([-1, 0, 1].map((o) => code(secret, o)));
  return ["000000", "111111", "222222", "333333"].find((c) => !valid.has(c))!;
}

async function selfToken(t: TestApp, userUuid: string, tenantUuid?: string): Promise<string> {
  return (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid, tenantUuid })).token;
}

/** A user with a confirmed factor, confirmed with the code `confirmOffset` steps from now. */
async function enrolledUser(t: TestApp, opts: { tenantUuid?: string; confirmOffset?: number } = {}) {
  await awayFromStepEdge();
  const username = `mfa-${crypto.randomUUID().slice(0, 8)}`;
  const uuid = await createUserRow(t.app, { username, password: "pw-secret", tenantUuid: opts.tenantUuid });
  const token = await selfToken(t, uuid, opts.tenantUuid);
  const started = await t.request("POST", "/0.1/users/me/mfa/totp", { token });
  expect(started.status).toBe(201);
  const secret: string = started.json.secret;
  const confirmedStep = stepNow() + (opts.confirmOffset ?? 0);
  const confirmed = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
    token,
    body: { code: codeAtStep(secret, confirmedStep) },
  });
  expect(confirmed.status).toBe(200);
  return { uuid, username, token, secret, confirmedStep, recoveryCodes: confirmed.json.recovery_codes as string[] };
}

async function sessionsOf(t: TestApp, userUuid: string): Promise<number> {
  return (
    await execRows<{ n: number }>(t.app.db, sql`select count(*)::int as n from auth_token where auth_id = ${userUuid}`)
  )[0]!.n;
}

describeEachDb(
  "multi-factor authentication",
  (get) => {
    const login = (auth: string, body: Record<string, unknown> = {}, remoteAddr?: string) =>
      get().request("POST", "/0.1/token", { body, headers: { Authorization: auth }, remoteAddr });

    test("enrolment through me: secret, otpauth URI and QR code once; status never shows the secret; stored encrypted", async () => {
      const t = get();
      const uuid = await createUserRow(t.app, { username: "enrol-me", password: "pw" });
      const token = await selfToken(t, uuid);
      expect((await t.request("GET", "/0.1/users/me/mfa", { token })).json).toEqual({
        totp: { enrolled: false, confirmed: false, created_at: null, confirmed_at: null },
        recovery_codes_left: 0,
        passkeys: 0,
        methods: [],
      });
      const r = await t.request("POST", "/0.1/users/me/mfa/totp", { token });
      expect(r.status).toBe(201);
      expect(r.json.secret).toMatch(/^[A-Z2-7]{32}$/);
      expect(r.json.otpauth_uri).toStartWith("otpauth://totp/Tessera:enrol-me?");
      expect(r.json.otpauth_uri).toContain(`secret=${r.json.secret}`);
      expect(r.json.qr_code).toStartWith("data:image/svg+xml;base64,");
      expect(Buffer.from(r.json.qr_code.split(",")[1], "base64").toString()).toContain("<svg");
      const status = await t.request("GET", "/0.1/users/me/mfa", { token });
      expect(status.json.totp.enrolled).toBe(true);
      expect(status.json.totp.confirmed).toBe(false);
      expect(status.text).not.toContain(r.json.secret);
      const [row] = await t.app.db.select().from(mfaTotp).where(eq(mfaTotp.userUuid, uuid));
      expect(row!.secretEncrypted).toStartWith("test-key:");
      expect(row!.secretEncrypted).not.toContain(r.json.secret);
      // Unconfirmed: the login is not asked for a code.
      expect((await login(basic("enrol-me", "pw"))).status).toBe(200);

      const wrong = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
        token,
        body: { code: wrongCodeFor(r.json.secret) },
      });
      expect(wrong.status).toBe(400);
      expect(wrong.json.error_id).toBe("invalid-data");
      expect(wrong.json.details.code.constraint_id).toBe("mfa_code");
      const ok = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
        token,
        body: { code: code(r.json.secret) },
      });
      expect(ok.status).toBe(200);
      expect(ok.json.recovery_codes).toHaveLength(10);
      expect(new Set(ok.json.recovery_codes).size).toBe(10);
      for (const c of ok.json.recovery_codes) expect(c).toMatch(/^[A-Z2-7]{5}-[A-Z2-7]{5}$/);
      const after = (await t.request("GET", "/0.1/users/me/mfa", { token })).json;
      expect(after.totp.confirmed).toBe(true);
      expect(after.recovery_codes_left).toBe(10);
      expect(after.methods).toEqual(["totp", "recovery_code"]);
      const enrolled = (await listRecordedEvents(t.app.db)).filter((e) => e.name === "auth_user_mfa_enrolled");
      expect(enrolled.at(-1)?.payload.data).toEqual({
        user_uuid: uuid,
        tenant_uuid: t.app.topTenantUuid,
        method: "totp",
      });
      // Confirmed once; a new enrolment needs the old factor removed first.
      expect(
        (await t.request("POST", "/0.1/users/me/mfa/totp/confirm", { token, body: { code: code(r.json.secret, 1) } }))
          .status,
      ).toBe(409);
      const again = await t.request("POST", "/0.1/users/me/mfa/totp", { token });
      expect(again.status).toBe(409);
      expect(again.json.error_id).toBe("conflict");
    });

    test("errors: no enrolment to confirm (404), invalid body (400), no ACL (403)", async () => {
      const t = get();
      const uuid = await createUserRow(t.app, { password: "pw" });
      const token = await selfToken(t, uuid);
      const none = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", { token, body: { code: "123456" } });
      expect(none.status).toBe(404);
      expect(none.json.resource).toBe("mfa");
      const bad = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", { token, body: { code: 123456 } });
      expect(bad.status).toBe(400);
      expect(bad.json.details.code).toBeDefined();
      const plain = (await tokenFor(t.app, { acl: ["auth.users.me.read"], userUuid: uuid })).token;
      const refused = await t.request("POST", "/0.1/users/me/mfa/totp", { token: plain });
      expect(refused.status).toBe(403);
      expect(refused.json.details.required_access).toBe("auth.users.me.mfa.create");
    });

    test("login of a user with a factor: mfa-required without a code (nothing created), then mfa_code; replay and clock skew", async () => {
      const t = get();
      const u = await enrolledUser(t); // confirmed with the current step's code
      const before = await sessionsOf(t, u.uuid);
      const required = await login(basic(u.username, "pw-secret"));
      expect(required.status).toBe(401);
      expect(required.json.error_id).toBe("mfa-required");
      expect(required.json.details).toEqual({ methods: ["totp", "recovery_code"] });
      expect(await sessionsOf(t, u.uuid)).toBe(before);
      // The confirming code's step is spent: replaying it (or an older step's code) is refused.
      expect(
        (await login(basic(u.username, "pw-secret"), { mfa_code: codeAtStep(u.secret, u.confirmedStep) })).json
          .error_id,
      ).toBe("authentication-failed");
      expect(
        (await login(basic(u.username, "pw-secret"), { mfa_code: codeAtStep(u.secret, u.confirmedStep - 1) })).status,
      ).toBe(401);
      // Clock skew: the code of the step after is accepted (±1 step), once.
      await awayFromStepEdge();
      const ahead = await login(basic(u.username, "pw-secret"), { mfa_code: code(u.secret, 1) });
      expect(ahead.status).toBe(200);
      expect(await sessionsOf(t, u.uuid)).toBe(before + 1);
      expect((await login(basic(u.username, "pw-secret"), { mfa_code: code(u.secret, 1) })).status).toBe(401);
      // Two steps ahead is outside the window.
      expect((await login(basic(u.username, "pw-secret"), { mfa_code: code(u.secret, 2) })).status).toBe(401);
      // A code never makes a wrong password right.
      expect((await login(basic(u.username, "wrong"), { mfa_code: code(u.secret, 1) })).json.error_id).toBe(
        "authentication-failed",
      );
      const failed = (await listRecordedEvents(t.app.db)).filter(
        (e) => e.name === "auth_user_mfa_failed" && e.payload.data.user_uuid === u.uuid,
      );
      expect(failed.length).toBeGreaterThanOrEqual(4);
    });

    test("a clock one step behind is accepted", async () => {
      const t = get();
      const u = await enrolledUser(t, { confirmOffset: -1 });
      expect((await login(basic(u.username, "pw-secret"), { mfa_code: code(u.secret) })).status).toBe(200);
    });

    test("Basic-only clients append the current code to the password (plain Basic request, as wazo_auth_client's token.new() sends)", async () => {
      const t = get();
      const u = await enrolledUser(t, { confirmOffset: -1 });
      expect((await login(basic(u.username, `pw-secret${wrongCodeFor(u.secret)}`))).status).toBe(401);
      const r = await login(basic(u.username, `pw-secret${code(u.secret)}`));
      expect(r.status).toBe(200);
      expect(r.json.data.auth_id).toBe(u.uuid);
      // Replayed inside the password: refused.
      expect((await login(basic(u.username, `pw-secret${code(u.secret)}`))).status).toBe(401);
      // A user without a factor whose password ends in six digits is never split.
      await createUserRow(t.app, { username: "digits", password: "pw123456" });
      expect((await login(basic("digits", "pw123456"))).status).toBe(200);
      expect((await login(basic("digits", "pw"))).status).toBe(401);
    });

    test("recovery codes work once each, in any case and spacing", async () => {
      const t = get();
      const u = await enrolledUser(t);
      const rc = u.recoveryCodes[3]!;
      expect(
        (await login(basic(u.username, "pw-secret"), { mfa_code: rc.toLowerCase().replace("-", " ") })).status,
      ).toBe(200);
      expect((await login(basic(u.username, "pw-secret"), { mfa_code: rc })).status).toBe(401);
      expect((await t.request("GET", "/0.1/users/me/mfa", { token: u.token })).json.recovery_codes_left).toBe(9);
      // Another user's recovery code is nothing here.
      const other = await enrolledUser(t);
      expect((await login(basic(u.username, "pw-secret"), { mfa_code: other.recoveryCodes[0]! })).status).toBe(401);
    });

    test("wrong codes are throttled like wrong passwords", async () => {
      const t = get();
      const u = await enrolledUser(t);
      const wrong = wrongCodeFor(u.secret);
      for (let i = 0; i < 3; i++)
        expect((await login(basic(u.username, "pw-secret"), { mfa_code: wrong })).status).toBe(401);
      const locked = await login(basic(u.username, "pw-secret"), { mfa_code: code(u.secret, 1) });
      expect(locked.status).toBe(429);
      expect(locked.json.error_id).toBe("too-many-requests");
    });

    test("a refresh-token login is not asked again; the refresh token was issued after the code", async () => {
      const t = get();
      const u = await enrolledUser(t);
      const first = await login(basic(u.username, "pw-secret"), {
        mfa_code: code(u.secret, 1),
        access_type: "offline",
        client_id: "phone",
      });
      expect(first.status).toBe(200);
      const refreshed = await login(basic("x", "y"), {
        refresh_token: first.json.data.refresh_token,
        client_id: "phone",
      });
      expect(refreshed.status).toBe(200);
      expect(refreshed.json.data.auth_id).toBe(u.uuid);
    });

    test("a user without a factor logs in exactly as before", async () => {
      const t = get();
      const uuid = await createUserRow(t.app, { username: "plain-user", password: "pw" });
      const r = await login(basic("plain-user", "pw"), { expiration: 60 });
      expect(r.status).toBe(200);
      expect(r.json.data.acl).toEqual([SELF_SERVICE]); // its policies' (none), plus mfa.self_service's entry
      expect(r.json.data.metadata).toEqual({
        uuid,
        tenant_uuid: t.app.topTenantUuid,
        auth_id: uuid,
        pbx_user_uuid: uuid,
        xivo_uuid: null,
        purpose: "user",
      });
      expect((await login(basic("plain-user", "pw"), { mfa_code: "123456" })).status).toBe(200); // ignored
      expect((await login(basic("plain-user", "nope"))).json.error_id).toBe("authentication-failed");
    });

    test("removal: by the user with a current code (throttled), by an admin of the user's tenant; never by another tenant's admin", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      const u = await enrolledUser(t, { tenantUuid: fam.child });
      // Another tenant's administrator sees and changes nothing (404, never a hint).
      for (const [method, path, body] of [
        ["GET", `/0.1/users/${u.uuid}/mfa`, undefined],
        ["POST", `/0.1/users/${u.uuid}/mfa/totp`, undefined],
        ["POST", `/0.1/users/${u.uuid}/mfa/totp/confirm`, { code: "123456" }],
      ] as const) {
        const r = await t.request(method, path, { token: fam.siblingAdmin, body });
        expect(r.status).toBe(404);
        expect(r.json.error_id).toBe("not-found");
      }
      // DELETE of what the caller cannot see answers like DELETE of what is absent (D4 of docs/wazo-auth-differences.md), and removes nothing.
      expect((await t.request("DELETE", `/0.1/users/${u.uuid}/mfa/totp`, { token: fam.siblingAdmin })).status).toBe(
        204,
      );
      // Nor through Wazo-Tenant naming the user's tenant.
      expect(
        (await t.request("GET", `/0.1/users/${u.uuid}/mfa`, { token: fam.siblingAdmin, tenant: fam.child })).status,
      ).toBe(401);
      expect((await t.request("GET", "/0.1/users/me/mfa", { token: u.token })).json.totp.confirmed).toBe(true);

      // The user: no code or a wrong one is a 400 (a wrong one is counted), a current one removes the factor.
      const missing = await t.request("DELETE", "/0.1/users/me/mfa/totp", { token: u.token, body: {} });
      expect(missing.status).toBe(400);
      expect(missing.json.details.code.constraint_id).toBe("required");
      const wrong = await t.request("DELETE", "/0.1/users/me/mfa/totp", {
        token: u.token,
        body: { code: wrongCodeFor(u.secret) },
      });
      expect(wrong.status).toBe(400);
      expect(
        (await t.request("DELETE", "/0.1/users/me/mfa/totp", { token: u.token, body: { code: code(u.secret, 1) } }))
          .status,
      ).toBe(204);
      expect((await t.request("GET", "/0.1/users/me/mfa", { token: u.token })).json.totp.enrolled).toBe(false);
      expect((await login(basic(u.username, "pw-secret"))).status).toBe(200);
      const removed = (await listRecordedEvents(t.app.db)).filter((e) => e.name === "auth_user_mfa_removed");
      expect(removed.at(-1)?.payload.data).toEqual({ user_uuid: u.uuid, tenant_uuid: fam.child, method: "totp" });

      // The parent tenant's administrator: reads the state and resets without any code.
      const v = await enrolledUser(t, { tenantUuid: fam.child });
      const seen = await t.request("GET", `/0.1/users/${v.uuid}/mfa`, { token: fam.admin });
      expect(seen.status).toBe(200);
      expect(seen.json.totp.confirmed).toBe(true);
      expect(seen.text).not.toContain(v.secret);
      expect((await t.request("DELETE", `/0.1/users/${v.uuid}/mfa/totp`, { token: fam.admin })).status).toBe(204);
      expect((await t.request("DELETE", `/0.1/users/${v.uuid}/mfa/totp`, { token: fam.admin })).status).toBe(204); // absent: no-op
      expect((await login(basic(v.username, "pw-secret"))).status).toBe(200);
      expect((await t.request("GET", `/0.1/users/${crypto.randomUUID()}/mfa`, { token: fam.admin })).status).toBe(404);
      expect(
        (await t.request("DELETE", `/0.1/users/${crypto.randomUUID()}/mfa/totp`, { token: fam.admin })).status,
      ).toBe(204);
    });

    test("tenant policy: required is inherited, enrol-only tokens, internal users exempt; a sub-tenant admin cannot relax its parent", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      expect((await t.request("GET", `/0.1/tenants/${fam.child}/mfa`, { token: fam.childAdmin })).json).toEqual({
        mfa: null,
        effective: "optional",
        inherited_from: null,
        passwordless: null,
        passwordless_effective: false,
        passwordless_inherited_from: null,
      });
      expect(
        (await t.request("PUT", `/0.1/tenants/${fam.tenant}/mfa`, { token: fam.admin, body: { mfa: "sometimes" } }))
          .status,
      ).toBe(400);
      expect(
        (
          await t.request("PUT", `/0.1/tenants/${fam.tenant}/mfa`, {
            token: fam.siblingAdmin,
            body: { mfa: "optional" },
          })
        ).status,
      ).toBe(404);
      expect((await t.request("GET", `/0.1/tenants/${fam.tenant}/mfa`, { token: fam.siblingAdmin })).status).toBe(404);
      expect(
        (await t.request("PUT", `/0.1/tenants/${fam.tenant}/mfa`, { token: fam.admin, body: { mfa: "required" } }))
          .status,
      ).toBe(204);
      expect((await t.request("GET", `/0.1/tenants/${fam.child}/mfa`, { token: fam.childAdmin })).json).toEqual({
        mfa: null,
        effective: "required",
        inherited_from: fam.tenant,
        passwordless: null,
        passwordless_effective: false,
        passwordless_inherited_from: null,
      });

      await createUserRow(t.app, { username: "must-enrol", password: "pw", tenantUuid: fam.child });
      const restricted = await login(basic("must-enrol", "pw"), { access_type: "offline", client_id: "phone" });
      expect(restricted.status).toBe(200);
      expect(restricted.json.data.acl).toEqual(["auth.users.me.mfa.#"]);
      expect(restricted.json.data.refresh_token).toBeUndefined();
      const enrol = await t.request("POST", "/0.1/users/me/mfa/totp", { token: restricted.json.data.token });
      expect(enrol.status).toBe(201);
      expect((await t.request("GET", `/0.1/users/me/mfa`, { token: restricted.json.data.token })).status).toBe(200);
      expect(
        (await t.request("GET", `/0.1/tenants/${fam.child}/mfa`, { token: restricted.json.data.token })).status,
      ).toBe(403);
      await createUserRow(t.app, {
        username: "service-bot",
        password: "pw",
        tenantUuid: fam.child,
        purpose: "internal",
      });
      expect((await login(basic("service-bot", "pw"))).json.data.acl).not.toEqual(["auth.users.me.mfa.#"]);

      // The child's admin cannot relax the parent's requirement; the parent's admin can.
      const relax = await t.request("PUT", `/0.1/tenants/${fam.child}/mfa`, {
        token: fam.childAdmin,
        body: { mfa: "optional" },
      });
      expect(relax.status).toBe(403);
      expect(relax.json.details).toEqual({ inherited_from: fam.tenant });
      expect(
        (await t.request("PUT", `/0.1/tenants/${fam.child}/mfa`, { token: fam.admin, body: { mfa: "optional" } }))
          .status,
      ).toBe(204);
      expect((await login(basic("must-enrol", "pw"))).json.data.acl).toEqual([SELF_SERVICE]);
      expect(
        (await t.request("PUT", `/0.1/tenants/${fam.child}/mfa`, { token: fam.admin, body: { mfa: null } })).status,
      ).toBe(204);
      expect(
        (await t.request("PUT", `/0.1/tenants/${fam.tenant}/mfa`, { token: fam.admin, body: { mfa: null } })).status,
      ).toBe(204);
      expect((await login(basic("must-enrol", "pw"))).json.data.acl).toEqual([SELF_SERVICE]);
    });

    test("MFA outcomes are counted in the metrics", async () => {
      const { body } = await renderMetrics();
      expect(body).toMatch(/tessera_mfa_total\{outcome="required"\} [1-9]/);
      expect(body).toMatch(/tessera_mfa_total\{outcome="accepted"\} [1-9]/);
      expect(body).toMatch(/tessera_logins_total\{result="mfa_required",backend="native"\} [1-9]/);
    });
  },
  {
    config: {
      mfa: { encryption_keys: [{ id: "test-key", key: TEST_MFA_KEY }] },
      login_throttling: { max_failures: 3 },
    },
  },
);

test("no encryption key configured: PGlite generates one in the data directory (0600); PostgreSQL refuses with 503", async () => {
  for (const kind of databaseKinds()) {
    const dataDir = mkdtempSync(join(tmpdir(), "tessera-mfa-"));
    const t = await createTestApp(kind, { config: { data_dir: dataDir } });
    try {
      const uuid = await createUserRow(t.app, { password: "pw" });
      const r = await t.request("POST", "/0.1/users/me/mfa/totp", { token: await selfToken(t, uuid) });
      if (kind === "pglite") {
        expect(r.status).toBe(201);
        const file = join(dataDir, "mfa-encryption.key");
        expect(Buffer.from(readFileSync(file, "utf8").trim(), "base64")).toHaveLength(32);
        expect(statSync(file).mode & 0o777).toBe(0o600);
      } else {
        expect(r.status).toBe(503);
        expect(r.json.error_id).toBe("mfa-not-configured");
        expect(r.json.message).toContain("mfa.encryption_keys");
      }
    } finally {
      await t.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
}, 60_000);

test("key rotation: a secret stored under an old key still verifies, and is re-encrypted under the first key", async () => {
  const old = { id: "old", key: Buffer.alloc(32, 1).toString("base64") };
  const t = await createTestApp("pglite", { config: { mfa: { encryption_keys: [old] } } });
  try {
    const u = await enrolledUser(t);
    expect((await t.app.db.select().from(mfaTotp).where(eq(mfaTotp.userUuid, u.uuid)))[0]!.secretEncrypted).toStartWith(
      "old:",
    );
    // A new context with the new key first (as after a restart with the edited configuration); no plugins: the code check alone.
    const rotated = await createTestApp("pglite", {
      config: { mfa: { encryption_keys: [{ id: "new", key: TEST_MFA_KEY }, old] } },
      database: async () => t.app.database,
      services: false,
    });
    expect(await useSecondFactor(rotated.app, u.uuid, code(u.secret, 1))).toBe("totp");
    expect((await t.app.db.select().from(mfaTotp).where(eq(mfaTotp.userUuid, u.uuid)))[0]!.secretEncrypted).toStartWith(
      "new:",
    );
  } finally {
    await t.close();
  }
}, 60_000);

test("mfa.self_service: the config-managed default user policy gets auth.users.me.mfa.#, so every user can enrol", async () => {
  const t = await createTestApp("pglite", {
    config: {
      default_user_policy: "wazo_default_user_policy",
      default_policies: { wazo_default_user_policy: { acl: ["confd.users.me.read"] } },
      mfa: { encryption_keys: [{ id: "k", key: TEST_MFA_KEY }] },
    },
  });
  try {
    await createUserRow(t.app, { username: "stock", password: "pw" });
    const r = await t.request("POST", "/0.1/token", { body: {}, headers: { Authorization: basic("stock", "pw") } });
    expect([...r.json.data.acl].sort()).toEqual(["auth.users.me.mfa.#", "confd.users.me.read"]);
    expect((await t.request("POST", "/0.1/users/me/mfa/totp", { token: r.json.data.token })).status).toBe(201);
  } finally {
    await t.close();
  }
}, 60_000);
