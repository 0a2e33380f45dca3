// The password policy (NIST SP 800-63B §3.1.1.2; docs/security.md "Password policy"): a minimum length
// per tenant (inherited, only raised below), the list of common and breached passwords, the user's own
// logins refused, on every way a password is set — and never on the hashes already stored. This suite
// runs with the service's defaults (the other suites' helper lowers them for their short fixtures).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { createHandler } from "../../src/app.ts";
import { parseConfig } from "../../src/config/config.ts";
import { configWarnings } from "../../src/config/warnings.ts";
import { tenants, users } from "../../src/db/schema.ts";
import { InvalidData } from "../../src/domain/errors.ts";
import { passwordProblem } from "../../src/services/auth/password-policy.ts";
import { hashPassword } from "../../src/services/auth/passwords.ts";
import { bootstrapOnStartup, bootstrapUser } from "../../src/services/identity/bootstrap.ts";
import { describeEachDb, type TestApp, type TestResponse } from "../helpers/app.ts";
import { adminToken, createTenantRow, createUserRow, tenantFamily, tokenFor } from "../helpers/fixtures.ts";
import { startSmtp } from "../helpers/smtp-server.ts";

const smtp = await startSmtp();
afterAll(() => smtp.close());

let n = 0;
// At least 10 characters: a username used as a password must break that rule, not the minimum length.
const uniq = () => `${process.pid}x${++n}`.padStart(10, "0");
const basic = (login: string, password: string) => ({
  Authorization: `Basic ${Buffer.from(`${login}:${password}`, "utf8").toString("base64")}`,
});
const GOOD = "correct horse battery staple";

const tooShort = (min: number) => ({
  constraint_id: "length",
  constraint: { min },
  message: `Shorter than minimum length ${min}.`,
});
const COMMON = {
  constraint_id: "not_common",
  constraint: "not a commonly used or breached password",
  message: "Too common: on a list of commonly used or breached passwords.",
};
const NOT_LOGIN = {
  constraint_id: "not_login",
  constraint: "neither the username nor an email address",
  message: "Must not be the username or an email address.",
};

/** The one 400 body, field by field, with `details` holding exactly `field`'s refusal. */
function expectRefused(r: TestResponse, resource: string, details: Record<string, unknown>) {
  expect(r.status).toBe(400);
  expect(r.json.error_id).toBe("invalid-data");
  expect(r.json.message).toBe("Invalid request");
  expect(r.json.resource).toBe(resource);
  expect(typeof r.json.timestamp).toBe("number");
  expect(r.json.details).toEqual(details);
}

describe("the rules (pure)", () => {
  const rules = { minLength: 8, commonPasswords: true };
  test("length is counted in code points, not UTF-16 units", async () => {
    expect(await passwordProblem("😀😀😀😀😀😀😀", rules, [])).toEqual(tooShort(8)); // 7 code points, 14 units
    expect(await passwordProblem("😀😀😀😀😀😀😀😀", rules, [])).toBeNull();
    expect(await passwordProblem("ab1-xyz", rules, [])).toEqual(tooShort(8));
  });
  test("the list is compared case-insensitively, after NFKC (full-width forms fold)", async () => {
    for (const pw of ["password", "PassWord", "Password1", "ｐａｓｓｗｏｒｄ", "iloveyou", "qwertyuiop"])
      expect(await passwordProblem(pw, rules, [])).toEqual(COMMON);
    expect(await passwordProblem(GOOD, rules, [])).toBeNull();
    expect(await passwordProblem("password", { ...rules, commonPasswords: false }, [])).toBeNull();
  });
  test("the user's username or email address, in any case, is refused", async () => {
    expect(await passwordProblem("Alice.Liddell", rules, ["alice.liddell", null])).toEqual(NOT_LOGIN);
    expect(await passwordProblem("ALICE@WONDER.LAND", rules, ["alice", "alice@wonder.land"])).toEqual(NOT_LOGIN);
    expect(await passwordProblem("alice.liddell-2", rules, ["alice.liddell"])).toBeNull(); // only the word itself
  });
  test("the service-wide minimum and the list switch are configuration, with a warning below NIST", () => {
    expect(parseConfig({}).password_policy).toEqual({ min_length: 8, common_passwords: true });
    expect(configWarnings(parseConfig({})).join("\n")).not.toContain("password_policy");
    expect(configWarnings(parseConfig({ password_policy: { min_length: 6 } })).join("\n")).toContain(
      "password_policy (min_length 6, common_passwords true) is below NIST SP 800-63B's (8, true)",
    );
    expect(() => parseConfig({ password_policy: { min_length: 0 } })).toThrow("password_policy");
  });
});

describeEachDb(
  "password policy",
  (get) => {
    const req = (...a: Parameters<TestApp["request"]>) => get().request(...a);

    async function userIn(tenantUuid: string, password = GOOD) {
      const username = `u${uniq()}`;
      const uuid = await createUserRow(get().app, { tenantUuid, username, password });
      return { uuid, username };
    }

    describe("POST /users", () => {
      test("a short, a common, and the login itself are refused, naming the rule; nothing is created", async () => {
        const admin = await adminToken(get().app);
        const name = `p${uniq()}`;
        const cases: Array<[Record<string, unknown>, unknown]> = [
          [{ password: "Ab1-xyz" }, tooShort(8)],
          [{ password: "Password1" }, COMMON],
          [{ password: name.toUpperCase() }, NOT_LOGIN],
          [{ password: `${name}@mail.example.org` }, NOT_LOGIN],
        ];
        for (const [body, detail] of cases) {
          const r = await req("POST", "/0.1/users", {
            token: admin,
            body: { username: name, email_address: `${name}@mail.example.org`, ...body },
          });
          expectRefused(r, "users", { password: detail });
          expect(r.text).not.toContain(String(body.password));
        }
        expect(await get().app.db.select().from(users).where(eq(users.username, name))).toEqual([]);
        const ok = await req("POST", "/0.1/users", { token: admin, body: { username: name, password: GOOD } });
        expect(ok.status).toBe(200);
        expect((await req("POST", "/0.1/token", { headers: basic(name, GOOD), body: {} })).status).toBe(200);
        // No password at all stays allowed (a user who logs in through an identity provider).
        expect((await req("POST", "/0.1/users", { token: admin, body: { username: `${name}-n` } })).status).toBe(200);
      });

      test("the maximum is at least 64: 1,024 characters pass, 1,025 are refused", async () => {
        const admin = await adminToken(get().app);
        const long = `${"x".repeat(1023)}y`;
        expect(
          (await req("POST", "/0.1/users", { token: admin, body: { username: `l${uniq()}`, password: long } })).status,
        ).toBe(200);
        const r = await req("POST", "/0.1/users", {
          token: admin,
          body: { username: `l${uniq()}`, password: `${long}z` },
        });
        expectRefused(r, "users", {
          password: { constraint_id: "length", constraint: { max: 1024 }, message: "Longer than maximum length 1024." },
        });
      });
    });

    describe("PUT /users/{u}/password (an administrator, and the user's own)", () => {
      test("the old password is checked first; then the new one against the policy (new_password)", async () => {
        const t = get();
        const { uuid, username } = await userIn(t.app.topTenantUuid);
        const own = (await tokenFor(t.app, { acl: [`auth.users.${uuid}.password.update`], userUuid: uuid })).token;
        const put = (old_password: string, new_password: string) =>
          req("PUT", `/0.1/users/${uuid}/password`, { token: own, body: { old_password, new_password } });
        expect((await put("wrong-old-password", "short")).status).toBe(401);
        expectRefused(await put(GOOD, "short"), "users", { new_password: tooShort(8) });
        expectRefused(await put(GOOD, "trustno1"), "users", { new_password: COMMON });
        expectRefused(await put(GOOD, username), "users", { new_password: NOT_LOGIN });
        expect((await put(GOOD, `${GOOD} 2`)).status).toBe(204);
        expect((await req("POST", "/0.1/token", { headers: basic(username, `${GOOD} 2`), body: {} })).status).toBe(200);
      });
    });

    describe("POST /users/password/reset", () => {
      test("an administrator's reset and the emailed link's are both checked; removing (null) is not", async () => {
        const t = get();
        const tenant = await createTenantRow(t.app);
        const { uuid, username } = await userIn(tenant);
        const admin = await adminToken(t.app);
        const reset = (password: string | null, token = admin) =>
          req("POST", `/0.1/users/password/reset?user_uuid=${uuid}`, { token, body: { password } });
        expectRefused(await reset("1234567"), "users", { password: tooShort(8) });
        expectRefused(await reset("Football"), "users", { password: COMMON });
        expectRefused(await reset(username.toUpperCase()), "users", { password: NOT_LOGIN });
        // The emailed token (a reset link) goes through the same check.
        const address = `${username}@reset.example.org`;
        const emails = { emails: [{ address, main: true, confirmed: true }] };
        expect((await req("PUT", `/0.1/admin/users/${uuid}/emails`, { token: admin, body: emails })).status).toBe(204);
        expect((await req("GET", `/0.1/users/password/reset?login=${username}`)).status).toBe(204);
        const mail = await smtp.waitForMail((m) => m.to.includes(address));
        const link = /token=([0-9a-f-]{36})/.exec(mail.text)![1]!;
        const viaLink = (password: string) =>
          req("POST", `/0.1/users/password/reset?user_uuid=${uuid}&token=${link}`, { body: { password } });
        expectRefused(await viaLink(address.toUpperCase()), "users", { password: NOT_LOGIN });
        expect((await viaLink(`${GOOD}!`)).status).toBe(204);
        expect((await reset(null)).status).toBe(204);
      });
    });

    describe("POST /users/register", () => {
      test("refused before anything is created: no tenant, no user, no mail", async () => {
        const name = `r${uniq()}`;
        const r = await req("POST", "/0.1/users/register", {
          body: { username: name, password: "monkey", email_address: `${name}@reg.example.org` },
        });
        expectRefused(r, "users", { password: tooShort(8) });
        const common = await req("POST", "/0.1/users/register", {
          body: { username: name, password: "baseball1", email_address: `${name}@reg.example.org` },
        });
        expectRefused(common, "users", { password: COMMON });
        expect(await get().app.db.select().from(tenants).where(eq(tenants.name, name))).toEqual([]);
        const ok = await req("POST", "/0.1/users/register", {
          body: { username: name, password: GOOD, email_address: `${name}@reg.example.org` },
        });
        expect(ok.status).toBe(200);
      });
    });

    describe("a tenant's minimum", () => {
      test("set on a tenant, shown by GET (and the list), inherited by its sub-tenants, applied to their users", async () => {
        const t = get();
        const admin = await adminToken(t.app);
        const parent = await req("POST", "/0.1/tenants", {
          token: admin,
          body: { name: `pp${uniq()}`, password_policy: { min_length: 12 } },
        });
        expect(parent.status).toBe(200);
        expect(parent.json.password_policy).toEqual({ min_length: 12, effective_min_length: 12, inherited_from: null });
        const child = await req("POST", "/0.1/tenants", {
          token: admin,
          tenant: parent.json.uuid,
          body: { name: `pc${uniq()}` },
        });
        expect(child.json.password_policy).toEqual({
          min_length: null,
          effective_min_length: 12,
          inherited_from: parent.json.uuid,
        });
        const listed = await req("GET", `/0.1/tenants?uuid=${child.json.uuid}`, { token: admin });
        expect(listed.json.items[0].password_policy).toEqual(child.json.password_policy);
        const create = (password: string) =>
          req("POST", "/0.1/users", {
            token: admin,
            tenant: child.json.uuid,
            body: { username: `c${uniq()}`, password },
          });
        expectRefused(await create("elevenchars"), "users", { password: tooShort(12) });
        expect((await create("twelve-chars")).status).toBe(200);
        // A user of the tenant changing its password later meets the same minimum.
        const { uuid } = await userIn(child.json.uuid);
        expectRefused(
          await req("PUT", `/0.1/users/${uuid}/password`, {
            token: admin,
            body: { old_password: GOOD, new_password: "elevenchars" },
          }),
          "users",
          { new_password: tooShort(12) },
        );
        // The service-wide minimum applies where no tenant sets one.
        expect(
          (await req("GET", `/0.1/tenants/${t.app.topTenantUuid}`, { token: admin })).json.password_policy,
        ).toEqual({
          min_length: null,
          effective_min_length: 8,
          inherited_from: null,
        });
      });

      test("bounds 8..64 and the one 400 body", async () => {
        const admin = await adminToken(get().app);
        for (const min_length of [7, 65, "x"]) {
          const r = await req("POST", "/0.1/tenants", {
            token: admin,
            body: { name: `b${uniq()}`, password_policy: { min_length } },
          });
          expect([r.status, r.json.error_id, r.json.resource]).toEqual([400, "invalid-data", "tenants"]);
          expect(Object.keys(r.json.details)).toEqual(["password_policy"]);
          expect(r.json.details.password_policy.min_length.constraint_id).toBe(
            typeof min_length === "string" ? "type" : "range",
          );
        }
      });

      test("a sub-tenant's administrator may raise the minimum set above, never lower it", async () => {
        const t = get();
        const fam = await tenantFamily(t.app);
        const master = await adminToken(t.app);
        const put = (tenant: string, token: string, body: Record<string, unknown>) =>
          req("PUT", `/0.1/tenants/${tenant}`, { token, body: { name: "n", ...body } });
        const policyOf = async (tenant: string) =>
          (await req("GET", `/0.1/tenants/${tenant}`, { token: master })).json.password_policy;
        expect((await put(fam.tenant, fam.admin, { password_policy: { min_length: 12 } })).status).toBe(204);
        // The child's administrator: below the parent's 12 is refused, whatever way it is put.
        const below = await put(fam.child, fam.childAdmin, { password_policy: { min_length: 10 } });
        expectRefused(below, "tenants", {
          password_policy: {
            min_length: {
              constraint_id: "range",
              constraint: { min: 12, max: 64 },
              message: "Must be at least 12: the minimum in force above this tenant.",
            },
          },
        });
        expect((await put(fam.child, fam.childAdmin, { password_policy: { min_length: 14 } })).status).toBe(204);
        expect(await policyOf(fam.child)).toEqual({ min_length: 14, effective_min_length: 14, inherited_from: null });
        // Nor may it lower its own tenant's minimum set by the parent's administrator, nor remove it.
        expect((await put(fam.child, fam.admin, { password_policy: { min_length: 16 } })).status).toBe(204);
        for (const policy of [{ min_length: 13 }, { min_length: null }, null]) {
          const r = await put(fam.child, fam.childAdmin, { password_policy: policy });
          expect([r.status, r.json.details.password_policy.min_length.constraint]).toEqual([400, { min: 16, max: 64 }]);
          expect(r.json.details.password_policy.min_length.message).toBe(
            "Must be at least 16: set by an administrator of a parent tenant, only they can lower it.",
          );
        }
        // Raising it does not hand it over: it still cannot come back below what was imposed.
        expect((await put(fam.child, fam.childAdmin, { password_policy: { min_length: 20 } })).status).toBe(204);
        expect((await put(fam.child, fam.childAdmin, { password_policy: { min_length: 17 } })).status).toBe(400);
        // A PUT that leaves the policy out changes nothing (a client unaware of it resets nothing).
        expect((await put(fam.child, fam.childAdmin, {})).status).toBe(204);
        expect((await policyOf(fam.child)).min_length).toBe(20);
        // The parent's administrator may lower what it set, down to the minimum above its own tenant.
        expect((await put(fam.child, fam.admin, { password_policy: null })).status).toBe(204);
        expect(await policyOf(fam.child)).toEqual({
          min_length: null,
          effective_min_length: 12,
          inherited_from: fam.tenant,
        });
        // The same holds one level up: once the master's administrator sets the tenant's minimum, the
        // tenant's own administrator cannot lower it...
        expect((await put(fam.tenant, master, { password_policy: { min_length: 9 } })).status).toBe(204);
        expect((await put(fam.tenant, fam.admin, { password_policy: { min_length: 8 } })).status).toBe(400);
        // ...and another tenant's administrator sees nothing of it.
        const sibling = await put(fam.tenant, fam.siblingAdmin, { password_policy: { min_length: 64 } });
        expect([sibling.status, sibling.json.error_id]).toEqual([404, "not-found"]);
        expect((await policyOf(fam.tenant)).min_length).toBe(9);
      });

      test("a minimum raised above a sub-tenant's own reaches it (the largest along the path wins)", async () => {
        const t = get();
        const fam = await tenantFamily(t.app);
        const master = await adminToken(t.app);
        const put = (tenant: string, token: string, min_length: number) =>
          req("PUT", `/0.1/tenants/${tenant}`, { token, body: { name: "n", password_policy: { min_length } } });
        expect((await put(fam.child, fam.childAdmin, 10)).status).toBe(204);
        expect((await put(fam.tenant, master, 15)).status).toBe(204);
        const child = (await req("GET", `/0.1/tenants/${fam.child}`, { token: master })).json.password_policy;
        expect(child).toEqual({ min_length: 10, effective_min_length: 15, inherited_from: fam.tenant });
        // The stale own value still round-trips (GET then PUT) without an error.
        expect(
          (
            await req("PUT", `/0.1/tenants/${fam.child}`, {
              token: fam.childAdmin,
              body: { name: "n", password_policy: child },
            })
          ).status,
        ).toBe(204);
        const { uuid } = await userIn(fam.child);
        expectRefused(
          await req("POST", `/0.1/users/password/reset?user_uuid=${uuid}`, {
            token: master,
            body: { password: "fourteen-chars" },
          }),
          "users",
          { password: tooShort(15) },
        );
      });

      test("moving a tenant from under a minimum its administrator may not lower is refused", async () => {
        const t = get();
        const fam = await tenantFamily(t.app);
        const master = await adminToken(t.app);
        const strict = await createTenantRow(t.app, { parentUuid: fam.tenant });
        const leaf = await createTenantRow(t.app, { parentUuid: strict });
        const body = { name: "strict", password_policy: { min_length: 16 } };
        expect((await req("PUT", `/0.1/tenants/${strict}`, { token: master, body })).status).toBe(204);
        const move = (token: string) => req("PUT", `/0.1/tenants/${leaf}/parent/${fam.tenant}`, { token });
        const refused = await move(fam.admin);
        expect([refused.status, refused.json.error_id, refused.json.resource]).toEqual([403, "forbidden", "tenants"]);
        expect(refused.json.details).toEqual({ password_policy: { min_length: { inherited_from: strict, min: 16 } } });
        const leafPolicy = async () =>
          (await req("GET", `/0.1/tenants/${leaf}`, { token: master })).json.password_policy.effective_min_length;
        expect(await leafPolicy()).toBe(16); // nothing moved
        // The master's administrator, who set it, may; so may anyone when the minimum comes along.
        expect((await move(master)).status).toBe(204);
        expect(await leafPolicy()).toBe(8);
      });
    });

    describe("tessera users (the CLI, through the API)", () => {
      test("create and set-password show the rule and exit 1; a good password passes", async () => {
        const t = get();
        const handle = createHandler(t.app, t.http);
        const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (r, s) => handle(r, s) });
        try {
          const env = {
            ...process.env,
            TESSERA_URL: `http://127.0.0.1:${server.port}`,
            TESSERA_TOKEN: await adminToken(t.app),
          };
          const tessera = async (...args: string[]) => {
            const p = Bun.spawn([process.execPath, "src/cli.ts", "users", ...args], {
              cwd: join(import.meta.dir, "../.."),
              env,
              stdout: "pipe",
              stderr: "pipe",
            });
            const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
            return { code: await p.exited, out, err };
          };
          const name = `cli${uniq()}`;
          const weak = await tessera("create", "--username", name, "--password", "letmein");
          expect(weak.code).toBe(1);
          expect(weak.err).toContain("(400 invalid-data: Invalid request — password: Shorter than minimum length 8.)");
          const made = await tessera("create", "--username", name, "--password", GOOD, "--json");
          expect(made.code).toBe(0);
          const uuid = JSON.parse(made.out).uuid as string;
          const common = await tessera("set-password", uuid, "--password", "sunshine");
          expect(common.code).toBe(1);
          expect(common.err).toContain("password: Too common: on a list of commonly used or breached passwords.");
          expect((await tessera("set-password", uuid, "--password", `${GOOD}?`)).code).toBe(0);
        } finally {
          server.stop(true);
        }
      }, 60_000);
    });

    describe("the bootstrap administrator", () => {
      test("is checked against the master tenant's minimum when created; an existing one is left alone", async () => {
        const t = get();
        const name = `boot${uniq()}`;
        const refusal = await bootstrapUser(t.app, name, "s3cret").catch((e) => e);
        expect(refusal).toBeInstanceOf(InvalidData);
        expect((refusal as InvalidData).details).toEqual({ password: tooShort(8) });
        expect(((await bootstrapUser(t.app, name, name.toUpperCase()).catch((e) => e)) as InvalidData).details).toEqual(
          {
            password: NOT_LOGIN,
          },
        );
        expect((await bootstrapUser(t.app, name, "choose-a-password")).created).toBe(true);
        // Run again (idempotent, e.g. bootstrap_user_on_startup at each start): the password is not set again.
        expect((await bootstrapUser(t.app, name, "weak")).created).toBe(false);
        expect((await req("POST", "/0.1/token", { headers: basic(name, "choose-a-password"), body: {} })).status).toBe(
          200,
        );
      });

      test("bootstrap_user_on_startup: a refused password stops the start with the rule", async () => {
        const c = get().app.config;
        const saved = { ...c };
        Object.assign(c, {
          bootstrap_user_on_startup: true,
          bootstrap_user_username: `st${uniq()}`,
          bootstrap_user_password: "12345678",
        });
        try {
          await expect(bootstrapOnStartup(get().app)).rejects.toThrow(
            "bootstrap_user_password is refused by the password policy: Too common: on a list of commonly used or breached passwords.",
          );
        } finally {
          Object.assign(c, saved);
        }
      });
    });

    describe("stored hashes (an import, an adopted wazo-auth database)", () => {
      test("a weak password already stored still logs in, and its rehash at login is not refused", async () => {
        const t = get();
        const username = `imported${uniq()}`;
        // As `tessera import` copies a row: wazo-auth's PBKDF2 format, written straight into auth_user.
        const legacy = await hashPassword("pw", { ...t.app.config, password_hash_algorithm: "pbkdf2_sha512" });
        const [row] = await t.app.db
          .insert(users)
          .values({
            username,
            tenantUuid: t.app.topTenantUuid,
            purpose: "user",
            passwordHash: legacy.hash,
            passwordSalt: legacy.salt,
            passwordIterations: legacy.iterations,
          })
          .returning();
        expect((await req("POST", "/0.1/token", { headers: basic(username, "pw"), body: {} })).status).toBe(200);
        const [after] = await t.app.db.select().from(users).where(eq(users.uuid, row!.uuid));
        expect(after!.passwordHash).toStartWith("$argon2id$"); // rehashed to the configured algorithm
        expect((await req("POST", "/0.1/token", { headers: basic(username, "pw"), body: {} })).status).toBe(200);
      });
    });
  },
  {
    config: {
      password_policy: {}, // the service's defaults
      public_url: "http://localhost",
      smtp: { hostname: "127.0.0.1", port: smtp.port },
      enabled_http_plugins: { user_registration: true },
    },
  },
);

describe("tessera bootstrap (the CLI)", () => {
  test("refuses a password the policy refuses, with the rule, exit 2; creates nobody", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-pwpolicy-"));
    try {
      writeFileSync(join(dir, "config.yml"), `data_dir: ${join(dir, "data")}\npassword_hash_iterations: 1000\n`);
      const env = { ...process.env, TESSERA_CONFIG: join(dir, "config.yml") };
      const run = (...args: string[]) =>
        Bun.spawnSync([process.execPath, "src/cli.ts", "bootstrap", ...args], {
          cwd: join(import.meta.dir, "../.."),
          env,
        });
      const weak = run("admin", "s3cret");
      expect(weak.exitCode).toBe(2);
      expect(weak.stderr.toString()).toContain("tessera bootstrap: password refused: Shorter than minimum length 8.");
      const good = run("admin", "choose-a-password");
      expect([good.exitCode, good.stdout.toString()]).toEqual([0, expect.stringContaining("created user admin")]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
