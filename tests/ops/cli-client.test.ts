// The real process driven from outside as operators and integrators do: the typed client
// (clients/typescript) and the `tessera` CLI (through bin/tessera.js under Node, as `npx tessera`).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTesseraClient, TesseraError, type TesseraClient } from "../../clients/typescript/index.ts";
import { freePort, waitForService } from "../helpers/service-process.ts";
import { currentCode } from "../../src/services/auth/totp.ts";
import { softAuthenticator } from "../helpers/soft-authenticator.ts";

const root = join(import.meta.dir, "../..");
const dir = mkdtempSync(join(tmpdir(), "tessera-cli-"));
const port = freePort();
const url = `http://127.0.0.1:${port}`;
// A cheap password hash: the suite creates users and logs in many times.
// A login name locks after three failures from one address (`users unlock` lifts it).
writeFileSync(join(dir, "config.yml"), "password_hash_iterations: 1000\nlogin_throttling:\n  max_failures: 3\n");
const env = {
  TESSERA_CONFIG: join(dir, "config.yml"),
  TESSERA_DATA_DIR: join(dir, "data"),
  TESSERA_PORT: String(port),
  TESSERA_LOG_LEVEL: "warning",
  TESSERA_URL: url,
};
let proc: ReturnType<typeof Bun.spawn>;

/** `npx tessera …` as a user runs it: Node runs bin/tessera.js, which runs the CLI on Bun. */
async function tessera(args: string[], extraEnv: Record<string, string> = {}) {
  const p = Bun.spawn(["node", "bin/tessera.js", ...args], {
    cwd: root,
    env: { ...process.env, ...env, ...extraEnv },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code: await p.exited, out, err };
}

beforeAll(async () => {
  const boot = await tessera(["bootstrap", "admin", "s3cret-admin"]);
  expect(boot.code).toBe(0);
  proc = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: root,
    env: { ...process.env, ...env },
    stdout: "ignore",
    stderr: "pipe",
  });
  if (!(await waitForService(`${url}/0.1`, 15))) throw new Error("tessera did not start");
}, 60_000);

afterAll(async () => {
  proc?.kill("SIGTERM");
  await proc?.exited;
  rmSync(dir, { recursive: true, force: true });
});

describe("the typed client", () => {
  let admin: TesseraClient;
  beforeAll(async () => {
    admin = createTesseraClient({ baseUrl: url });
    await admin.login({ username: "admin", password: "s3cret-admin" });
  });

  test("login with Basic, boolean token check with scope and tenant, revoke", async () => {
    const service = createTesseraClient({ baseUrl: url });
    expect(await service.isTokenValid(admin.token!, { scope: "auth.users.read" })).toBe(true);
    expect(await service.isTokenValid(crypto.randomUUID())).toBe(false);
    expect(await service.isTokenValid("")).toBe(false);
    const other = createTesseraClient({ baseUrl: url });
    const tok = await other.login({ username: "admin", password: "s3cret-admin", expiration: 60 });
    expect(tok.acl).toEqual(expect.any(Array));
    await other.revokeToken();
    expect(await service.isTokenValid(tok.token)).toBe(false);
    const wrong = await createTesseraClient({ baseUrl: url })
      .login({ username: "admin", password: "nope" })
      .catch((e) => e);
    expect(wrong).toBeInstanceOf(TesseraError);
    expect([wrong.status, wrong.body.error_id]).toEqual([401, "authentication-failed"]);
  });

  test("offline login and refresh", async () => {
    const c = createTesseraClient({ baseUrl: url });
    const first = await c.login({
      username: "admin",
      password: "s3cret-admin",
      accessType: "offline",
      clientId: "cli-test",
    });
    expect(first.refresh_token).toEqual(expect.any(String));
    const next = await createTesseraClient({ baseUrl: url }).refresh({
      refreshToken: first.refresh_token!,
      clientId: "cli-test",
    });
    expect(next.token).not.toBe(first.token);
  });

  test("operations by operationId, Wazo-Tenant, pagination, and tenant isolation", async () => {
    const acme = await admin.ops.createTenant({ body: { name: "acme" } });
    const globex = await admin.ops.createTenant({ body: { name: "globex" } });
    const inAcme = admin.withTenant(acme.uuid);
    for (let i = 0; i < 7; i++) await inAcme.ops.createUser({ body: { username: `acme-${i}`, password: "pw-acme-1" } });
    const seen: string[] = [];
    for await (const user of inAcme.paginate("listUsers", {}, 3)) seen.push(user.username ?? "");
    expect(seen.sort()).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => `acme-${i}`));
    // A globex administrator sees nothing of acme, even naming it.
    await admin
      .withTenant(globex.uuid)
      .ops.createUser({ body: { username: "globex-admin", password: "pw-globex", purpose: "user" } });
    const policy = await admin
      .withTenant(globex.uuid)
      .ops.createPolicy({ body: { name: "globex-admins", acl: ["auth.#"] } });
    const globexAdmin = (
      await admin.withTenant(globex.uuid).ops.listUsers({ params: { query: { username: "globex-admin" } as never } })
    ).items[0]!;
    await admin
      .withTenant(globex.uuid)
      .ops.addUserPolicy({ params: { path: { user_uuid: globexAdmin.uuid, policy: policy.uuid } } });
    const hostile = createTesseraClient({ baseUrl: url });
    await hostile.login({ username: "globex-admin", password: "pw-globex" });
    const denied = await hostile
      .withTenant(acme.uuid)
      .ops.listUsers()
      .catch((e) => e);
    expect([denied.status, denied.body.error_id]).toEqual([401, "unauthorized-tenant"]);
    const own = await hostile.ops.listUsers();
    expect(own.items.map((u) => u.username)).toEqual(["globex-admin"]);
    const acmeUser = (await inAcme.ops.listUsers({ params: { query: { search: "acme-0" } } })).items[0]!;
    const notFound = await hostile.ops.getUser({ params: { path: { user_uuid: acmeUser.uuid } } }).catch((e) => e);
    expect(notFound.status).toBe(404);
  }, 60_000);
});

describe("the tessera CLI", () => {
  const auth = { TESSERA_AUTH_USER: "admin", TESSERA_AUTH_PASSWORD: "s3cret-admin" };

  test("--help everywhere, usage errors exit 2, an unreachable service exits 3", async () => {
    for (const args of [
      ["--help"],
      ["users", "--help"],
      ["token", "check", "--help"],
      ["policies", "add-acl", "--help"],
    ]) {
      const r = await tessera(args);
      expect([args, r.code]).toEqual([args, 0]);
      expect(r.out.toLowerCase()).toContain("usage");
    }
    expect((await tessera(["users"])).code).toBe(2);
    expect((await tessera(["users", "list"])).code).toBe(2); // no credentials
    const down = await tessera(["users", "list", "--token", crypto.randomUUID(), "--url", "http://127.0.0.1:1"]);
    expect([down.code, down.err]).toEqual([3, expect.stringContaining("cannot reach Tessera")]);
  }, 60_000);

  test("token create, check (exit 0 valid, 1 invalid), revoke", async () => {
    const created = await tessera(["token", "create"], auth);
    expect(created.code).toBe(0);
    const token = created.out.trim();
    expect(token).toMatch(/^[0-9a-f-]{36}$/);
    expect((await tessera(["token", "check", token, "--scope", "auth.users.read"])).code).toBe(0);
    const json = await tessera(["token", "check", crypto.randomUUID(), "--json"]);
    expect([json.code, JSON.parse(json.out)]).toEqual([1, { valid: false }]);
    expect((await tessera(["token", "revoke", token])).code).toBe(0);
    expect((await tessera(["token", "check", token])).code).toBe(1);
    const bad = await tessera(["token", "create", "--username", "admin", "--password", "wrong"]);
    expect([bad.code, bad.err]).toEqual([1, expect.stringContaining("401")]);
    expect(bad.err).not.toContain("wrong");
  }, 60_000);

  test("users, tenants, groups and policies: create, list (JSON and table), show, add-acl, unlock, delete", async () => {
    const tenant = await tessera(
      ["tenants", "create", "--name", "initech", "--domains", "initech.example.com", "--json"],
      auth,
    );
    expect(tenant.code).toBe(0);
    const tenantUuid = JSON.parse(tenant.out).uuid as string;
    const inTenant = { ...auth, TESSERA_TENANT: tenantUuid };
    const user = await tessera(
      [
        "users",
        "create",
        "--username",
        "peter",
        "--password",
        "pw-peter",
        "--email",
        "peter@initech.example.com",
        "--json",
      ],
      inTenant,
    );
    expect([user.code, JSON.parse(user.out).tenant_uuid]).toEqual([0, tenantUuid]);
    const listed = await tessera(["users", "list", "--json"], inTenant);
    expect(JSON.parse(listed.out).items.map((u: { username: string }) => u.username)).toEqual(["peter"]);
    const table = await tessera(["users", "list", "--all"], inTenant);
    expect(table.code).toBe(0);
    expect(table.out).toContain("peter");
    expect(table.out).toContain("username");
    const policy = await tessera(
      ["policies", "create", "--name", "tps", "--acl", "confd.users.read,!confd.users.delete", "--json"],
      inTenant,
    );
    expect(JSON.parse(policy.out).acl.sort()).toEqual(["!confd.users.delete", "confd.users.read"]);
    expect((await tessera(["policies", "add-acl", "tps", "calld.calls.read"], inTenant)).code).toBe(0);
    expect((await tessera(["policies", "remove-acl", "tps", "confd.users.read"], inTenant)).code).toBe(0);
    const shown = await tessera(["policies", "show", "tps", "--json"], inTenant);
    expect(JSON.parse(shown.out).acl.sort()).toEqual(["!confd.users.delete", "calld.calls.read"]);
    const group = await tessera(["groups", "create", "--name", "staff", "--json"], inTenant);
    expect(group.code).toBe(0);
    expect((await tessera(["groups", "list"], inTenant)).out).toContain("staff");
    const uuid = JSON.parse(user.out).uuid as string;
    const peterLogs = async (password: string) =>
      (
        await fetch(`${url}/0.1/token`, {
          method: "POST",
          headers: { Authorization: `Basic ${btoa(`peter:${password}`)}`, "Content-Type": "application/json" },
          body: "{}",
        })
      ).status;
    for (let i = 0; i < 3; i++) expect(await peterLogs("typo")).toBe(401);
    expect(await peterLogs("pw-peter")).toBe(429);
    const unlocked = await tessera(["users", "unlock", uuid], inTenant);
    expect([unlocked.code, unlocked.out.trim()]).toEqual([0, `unlocked user ${uuid}`]);
    expect(await peterLogs("pw-peter")).toBe(200);
    expect((await tessera(["users", "delete", uuid], inTenant)).code).toBe(0);
    const gone = await tessera(["users", "show", uuid], inTenant);
    expect([gone.code, gone.err]).toEqual([1, expect.stringContaining("404")]);
    const invalid = await tessera(["users", "create", "--username", "", "--json"], inTenant);
    expect([invalid.code, invalid.err]).toEqual([1, expect.stringContaining("invalid-data")]);
  }, 120_000);

  test("scim-tokens: create (the token shown once), list without it, revoke", async () => {
    const created = await tessera(["scim-tokens", "create", "Entra ID", "--json"], auth);
    expect(created.code).toBe(0);
    const token = JSON.parse(created.out) as { uuid: string; token: string; acl: string[] };
    expect([token.token.startsWith("tscim_"), token.acl]).toEqual([true, ["auth.scim.#"]]);
    const listed = await tessera(["scim-tokens", "list", "--json"], auth);
    expect(JSON.parse(listed.out).map((t: { uuid: string }) => t.uuid)).toContain(token.uuid);
    expect(listed.out).not.toContain(token.token);
    expect((await tessera(["scim-tokens", "revoke", token.uuid], auth)).code).toBe(0);
    const after = await tessera(["scim-tokens", "list", "--json"], auth);
    expect(JSON.parse(after.out).map((t: { uuid: string }) => t.uuid)).not.toContain(token.uuid);
  }, 60_000);

  test("oidc-clients: create (the secret shown once), list, show without the secret, delete", async () => {
    const created = await tessera(
      [
        "oidc-clients",
        "create",
        "--name",
        "grafana",
        "--redirect-uris",
        "https://grafana.example.com/login/generic_oauth",
        "--first-party",
        "--json",
      ],
      auth,
    );
    expect(created.code).toBe(0);
    const client = JSON.parse(created.out) as {
      client_id: string;
      client_secret: string;
      first_party: boolean;
      client_type: string;
    };
    expect([client.client_type, client.first_party, typeof client.client_secret]).toEqual([
      "confidential",
      true,
      "string",
    ]);
    expect((await tessera(["oidc-clients", "list"], auth)).out).toContain("grafana");
    const shown = await tessera(["oidc-clients", "show", client.client_id, "--json"], auth);
    expect(JSON.parse(shown.out).redirect_uris).toEqual(["https://grafana.example.com/login/generic_oauth"]);
    expect(shown.out).not.toContain(client.client_secret);
    const pub = await tessera(
      [
        "oidc-clients",
        "create",
        "--name",
        "phone",
        "--type",
        "public",
        "--redirect-uris",
        "com.example.phone:/cb",
        "--json",
      ],
      auth,
    );
    expect(JSON.parse(pub.out)).not.toHaveProperty("client_secret");
    const daemon = await tessera(
      [
        "oidc-clients",
        "create",
        "--name",
        "daemon",
        "--grant-types",
        "client_credentials",
        "--acl",
        "confd.users.read,calld.#",
        "--scopes",
        "acl:calld.#",
        "--json",
      ],
      auth,
    );
    expect(JSON.parse(daemon.out)).toMatchObject({ acl: ["confd.users.read", "calld.#"], scopes: ["acl:calld.#"] });
    const wiki = await tessera(
      [
        "oidc-clients",
        "create",
        "--name",
        "wiki",
        "--redirect-uris",
        "https://wiki.example.com/cb",
        "--backchannel-logout-uri",
        "https://wiki.example.com/backchannel",
        "--frontchannel-logout-uri",
        "https://wiki.example.com/frontchannel",
        "--logout-session-required",
        "--json",
      ],
      auth,
    );
    expect(JSON.parse(wiki.out)).toMatchObject({
      backchannel_logout_uri: "https://wiki.example.com/backchannel",
      backchannel_logout_session_required: true,
      frontchannel_logout_uri: "https://wiki.example.com/frontchannel",
      frontchannel_logout_session_required: true,
    });
    expect((await tessera(["oidc-clients", "delete", client.client_id], auth)).code).toBe(0);
    const gone = await tessera(["oidc-clients", "show", client.client_id], auth);
    expect([gone.code, gone.err]).toEqual([1, expect.stringContaining("404")]);
    const invalid = await tessera(
      ["oidc-clients", "create", "--name", "x", "--redirect-uris", "https://a.example.com/#frag", "--json"],
      auth,
    );
    expect([invalid.code, invalid.err]).toEqual([1, expect.stringContaining("invalid-data")]);
  }, 120_000);
  test("webhooks: create (the secret shown once), list, rotate-secret, ping, delete; a private URL refused", async () => {
    const created = await tessera(
      [
        "webhooks",
        "create",
        "--endpoint",
        "https://hooks.example.com/t",
        "--events",
        "auth_user_*,auth_group_created",
        "--json",
      ],
      auth,
    );
    expect([created.code, created.err]).toEqual([0, ""]);
    const hook = JSON.parse(created.out) as { uuid: string; secret: string; events: string[] };
    expect(hook.events).toEqual(["auth_user_*", "auth_group_created"]);
    expect(hook.secret).toStartWith("whsec_");
    expect((await tessera(["webhooks", "list"], auth)).out).toContain("hooks.example.com");
    const shown = await tessera(["webhooks", "show", hook.uuid, "--json"], auth);
    expect(shown.out).not.toContain(hook.secret);
    const rotated = JSON.parse((await tessera(["webhooks", "rotate-secret", hook.uuid, "--json"], auth)).out);
    expect(rotated.secret).toStartWith("whsec_");
    expect(rotated.secret).not.toBe(hook.secret);
    const ping = await tessera(["webhooks", "ping", hook.uuid, "--json"], auth);
    expect([ping.code, typeof JSON.parse(ping.out).uuid]).toEqual([0, "string"]);
    expect((await tessera(["webhooks", "delete", hook.uuid], auth)).code).toBe(0);
    const refused = await tessera(
      ["webhooks", "create", "--endpoint", "https://169.254.169.254/latest", "--events", "*", "--json"],
      auth,
    );
    expect([refused.code, refused.err]).toEqual([1, expect.stringContaining("invalid-data")]);
  }, 120_000);
  test("users mfa show and reset; the typed client's login with mfaCode (the PGlite service generated its MFA key)", async () => {
    const admin = createTesseraClient({ baseUrl: url });
    const adminToken = (await admin.login({ username: "admin", password: "s3cret-admin" })).token;
    const user = await admin.call("createUser", { body: { username: "milton", password: "pw-milton" } });
    // Milton may manage its own factors (a policy with the self-service ACL).
    const asAdmin = { "X-Auth-Token": adminToken, "Content-Type": "application/json" };
    const policy = await (
      await fetch(`${url}/0.1/policies`, {
        method: "POST",
        headers: asAdmin,
        body: JSON.stringify({ name: "self-mfa", acl: ["auth.users.me.mfa.#"] }),
      })
    ).json();
    await fetch(`${url}/0.1/users/${user.uuid}/policies/${policy.uuid}`, { method: "PUT", headers: asAdmin });
    const enrol = (await admin.call("createUserMfaTotp", { params: { path: { user_uuid: user.uuid } } })) as {
      secret: string;
    };
    await admin.call("confirmUserMfaTotp", {
      params: { path: { user_uuid: user.uuid } },
      body: { code: currentCode(enrol.secret, Date.now() - 30_000) },
    });
    const shown = await tessera(["users", "mfa", "show", user.uuid, "--json"], auth);
    expect([shown.code, JSON.parse(shown.out).totp.confirmed, JSON.parse(shown.out).recovery_codes_left]).toEqual([
      0,
      true,
      10,
    ]);
    expect(shown.out).not.toContain(enrol.secret);
    const refused = await createTesseraClient({ baseUrl: url })
      .login({ username: "milton", password: "pw-milton" })
      .catch((e) => e);
    expect([refused.status, refused.body.error_id, refused.body.details.methods]).toEqual([
      401,
      "mfa-required",
      ["totp", "recovery_code"],
    ]);
    const ok = await createTesseraClient({ baseUrl: url }).login({
      username: "milton",
      password: "pw-milton",
      mfaCode: currentCode(enrol.secret),
    });
    expect(ok.auth_id).toBe(user.uuid);
    // A passkey too (registered by milton through `me`, with the software authenticator): shown, then reset.
    const own = { "X-Auth-Token": ok.token, "Content-Type": "application/json" };
    const started = await fetch(`${url}/0.1/users/me/mfa/passkeys/registration`, { method: "POST", headers: own });
    const ceremony = await started.json();
    expect([started.status, ceremony]).toEqual([201, expect.anything()]);
    const registered = await fetch(`${url}/0.1/users/me/mfa/passkeys`, {
      method: "POST",
      headers: own,
      body: JSON.stringify({
        challenge_id: ceremony.challenge_id,
        name: "Key",
        credential: softAuthenticator().register(ceremony.options, url),
      }),
    });
    expect(registered.status).toBe(201);
    expect(JSON.parse((await tessera(["users", "mfa", "show", user.uuid, "--json"], auth)).out).passkeys).toBe(1);
    const reset = await tessera(["users", "mfa", "reset", user.uuid], auth);
    expect([reset.code, reset.out.trim()]).toEqual([0, `removed the second factors of user ${user.uuid}`]);
    expect((await tessera(["users", "mfa", "show", user.uuid], auth)).out).toContain("none");
    expect(JSON.parse((await tessera(["users", "mfa", "show", user.uuid, "--json"], auth)).out).passkeys).toBe(0);
    expect(
      (await createTesseraClient({ baseUrl: url }).login({ username: "milton", password: "pw-milton" })).auth_id,
    ).toBe(user.uuid);
  }, 60_000);
});
