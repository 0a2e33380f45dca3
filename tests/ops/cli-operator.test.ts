// The CLI commands an operator reaches for, on the real process: users update and set-password,
// a user's policies, group membership, sessions list and revoke, refusals of what would do nothing
// or something unmeant (an empty create, an unknown option), tenant isolation through the CLI, and
// the terminal: tables fitted to its width and colours only there.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTesseraClient, type TesseraClient } from "../../clients/typescript/index.ts";
import { CliService, cliKinds, repoRoot } from "../helpers/cli-service.ts";

for (const kind of cliKinds()) {
  describe(`the operator's CLI [${kind}]`, () => {
    const svc = new CliService(kind, "cli-op");
    const { env, url, admin, tessera } = svc;
    let client: TesseraClient;
    let tenant = "";

    const inTenant = () => ({ ...admin, TESSERA_TENANT: tenant });
    const userNamed = async (username: string) =>
      (await client.withTenant(tenant).ops.listUsers({ params: { query: { search: username } } })).items.find(
        (u) => u.username === username,
      )!;

    beforeAll(async () => {
      client = await svc.start();
      tenant = (await client.ops.createTenant({ body: { name: "ops" } })).uuid;
    }, 120_000);

    afterAll(() => svc.stop());

    test("an empty create and an unknown option are refused (exit 2) and create nothing", async () => {
      const before = (await client.withTenant(tenant).ops.listUsers()).total;
      const empty = await tessera(["users", "create"], inTenant());
      expect([empty.code, empty.err]).toEqual([2, expect.stringContaining("give --username or --email")]);
      const typo = await tessera(["users", "create", "--usernme", "bob"], inTenant());
      expect([typo.code, typo.err]).toEqual([
        2,
        expect.stringContaining("unknown option --usernme (did you mean --username?)"),
      ]);
      for (const args of [
        ["groups", "create"],
        ["policies", "create", "--acl", "a.b"],
        ["tenants", "create"],
      ])
        expect((await tessera(args, inTenant())).code).toBe(2);
      expect((await client.withTenant(tenant).ops.listUsers()).total).toBe(before);
      // A boolean's negation is an option too; an empty-string value still reaches the service's validation.
      expect((await tessera(["users", "list", "--no-recurse", "--json"], inTenant())).code).toBe(0);
    }, 60_000);

    test("users update changes the fields given and keeps the others; --disable ends the user's sessions", async () => {
      expect(
        (
          await tessera(
            ["users", "create", "--username", "ann", "--firstname", "Ann", "--password", "pw-ann-1"],
            inTenant(),
          )
        ).code,
      ).toBe(0);
      const ann = await userNamed("ann");
      const updated = await tessera(["users", "update", ann.uuid, "--lastname", "Smith", "--json"], inTenant());
      expect(updated.code).toBe(0);
      expect(JSON.parse(updated.out)).toMatchObject({
        username: "ann",
        firstname: "Ann",
        lastname: "Smith",
        enabled: true,
      });
      const session = await createTesseraClient({ baseUrl: url }).login({ username: "ann", password: "pw-ann-1" });
      const disabled = await tessera(["users", "update", ann.uuid, "--disable", "--json"], inTenant());
      expect(JSON.parse(disabled.out)).toMatchObject({ enabled: false, firstname: "Ann", lastname: "Smith" });
      expect(await client.isTokenValid(session.token)).toBe(false);
      expect(
        JSON.parse((await tessera(["users", "update", ann.uuid, "--enable", "--json"], inTenant())).out).enabled,
      ).toBe(true);
      expect((await tessera(["users", "update", ann.uuid], inTenant())).code).toBe(2);
      expect((await tessera(["users", "update", ann.uuid, "--enable", "--disable"], inTenant())).code).toBe(2);
    }, 60_000);

    test("users set-password: from standard input as an administrator, or with the old password", async () => {
      const ann = await userNamed("ann");
      const set = await tessera(["users", "set-password", ann.uuid], inTenant(), "pw-ann-2\n");
      expect([set.code, set.out]).toEqual([0, expect.stringContaining("password set")]);
      expect(set.out + set.err).not.toContain("pw-ann-2");
      await createTesseraClient({ baseUrl: url }).login({ username: "ann", password: "pw-ann-2" });
      const wrongOld = await tessera(
        ["users", "set-password", ann.uuid, "--old-password", "nope", "--password", "pw-ann-3"],
        inTenant(),
      );
      expect(wrongOld.code).toBe(1);
      const changed = await tessera(["users", "set-password", ann.uuid, "--old-password", "pw-ann-2"], {
        ...inTenant(),
        TESSERA_NEW_PASSWORD: "pw-ann-3",
      });
      expect(changed.code).toBe(0);
      await createTesseraClient({ baseUrl: url }).login({ username: "ann", password: "pw-ann-3" });
      expect((await tessera(["users", "set-password", ann.uuid], inTenant())).code).toBe(2); // no password anywhere
    }, 60_000);

    test("a user's policies and a group's members: add and remove (idempotent)", async () => {
      const ann = await userNamed("ann");
      expect(
        (await tessera(["policies", "create", "--name", "readers", "--acl", "confd.users.read"], inTenant())).code,
      ).toBe(0);
      const group = JSON.parse((await tessera(["groups", "create", "--name", "staff", "--json"], inTenant())).out)
        .uuid as string;
      for (let i = 0; i < 2; i++) {
        expect((await tessera(["users", "add-policy", ann.uuid, "readers"], inTenant())).code).toBe(0);
        expect((await tessera(["groups", "add-user", group, ann.uuid], inTenant())).code).toBe(0);
      }
      const inT = client.withTenant(tenant);
      expect(
        (await inT.ops.listUserPolicies({ params: { path: { user_uuid: ann.uuid } } })).items.map((p) => p.slug),
      ).toEqual(["readers"]);
      expect(
        (await inT.ops.listGroupUsers({ params: { path: { group_uuid: group } } })).items.map((u) => u.uuid),
      ).toEqual([ann.uuid]);
      expect((await tessera(["users", "remove-policy", ann.uuid, "readers"], inTenant())).code).toBe(0);
      expect((await tessera(["groups", "remove-user", group, ann.uuid], inTenant())).code).toBe(0);
      expect((await inT.ops.listUserPolicies({ params: { path: { user_uuid: ann.uuid } } })).total).toBe(0);
      expect((await inT.ops.listGroupUsers({ params: { path: { group_uuid: group } } })).total).toBe(0);
    }, 60_000);

    test("sessions list (all, one user's) and revoke", async () => {
      const ann = await userNamed("ann");
      const login = await createTesseraClient({ baseUrl: url }).login({ username: "ann", password: "pw-ann-3" });
      const mine = JSON.parse((await tessera(["sessions", "list", "--user", ann.uuid, "--json"], inTenant())).out);
      expect(mine.items.map((s: { uuid: string }) => s.uuid)).toContain(login.session_uuid);
      expect(mine.items.every((s: { user_uuid: string }) => s.user_uuid === ann.uuid)).toBe(true);
      const all = JSON.parse((await tessera(["sessions", "list", "--json"], inTenant())).out);
      expect(all.items.map((s: { uuid: string }) => s.uuid)).toContain(login.session_uuid);
      const revoked = await tessera(["sessions", "revoke", login.session_uuid!], inTenant());
      expect([revoked.code, revoked.out]).toEqual([0, expect.stringContaining("revoked session")]);
      expect(await client.isTokenValid(login.token)).toBe(false);
      expect((await tessera(["sessions", "revoke", login.session_uuid!, "--user", ann.uuid], inTenant())).code).toBe(0); // already ended
    }, 60_000);

    test("a hostile tenant administrator can neither see nor change another tenant's users, groups or sessions", async () => {
      const ann = await userNamed("ann");
      const annSession = await createTesseraClient({ baseUrl: url }).login({ username: "ann", password: "pw-ann-3" });
      const other = await client.ops.createTenant({ body: { name: "rival" } });
      const inOther = client.withTenant(other.uuid);
      const mallory = await inOther.ops.createUser({
        body: { username: "mallory", password: "pw-mallory", purpose: "user" },
      });
      const policy = await inOther.ops.createPolicy({ body: { name: "rival-admins", acl: ["auth.#"] } });
      await inOther.ops.addUserPolicy({ params: { path: { user_uuid: mallory.uuid, policy: policy.uuid } } });
      const staff = (await client.withTenant(tenant).ops.listGroups({ params: { query: { search: "staff" } } }))
        .items[0]!;
      const hostile = { TESSERA_AUTH_USER: "mallory", TESSERA_AUTH_PASSWORD: "pw-mallory" };
      for (const args of [
        ["users", "update", ann.uuid, "--lastname", "Pwned"],
        ["users", "set-password", ann.uuid, "--password", "pw-pwned"],
        ["users", "add-policy", ann.uuid, "rival-admins"],
        ["groups", "add-user", staff.uuid, mallory.uuid],
      ]) {
        const r = await tessera(args, hostile);
        expect([args, r.code]).toEqual([args, 1]);
      }
      // A session it cannot see: nothing done, the desired state's 204 (D4 of docs/wazo-auth-differences.md).
      expect((await tessera(["sessions", "revoke", annSession.session_uuid!], hostile)).code).toBe(0);
      expect((await tessera(["sessions", "revoke", annSession.session_uuid!, "--user", ann.uuid], hostile)).code).toBe(
        0,
      );
      const seen = JSON.parse((await tessera(["sessions", "list", "--recurse", "--json"], hostile)).out);
      expect(seen.items.every((s: { tenant_uuid: string }) => s.tenant_uuid === other.uuid)).toBe(true);
      const annAfter = await client.withTenant(tenant).ops.getUser({ params: { path: { user_uuid: ann.uuid } } });
      expect(annAfter.lastname).toBe("Smith");
      expect(await client.isTokenValid(annSession.token)).toBe(true);
      await createTesseraClient({ baseUrl: url }).login({ username: "ann", password: "pw-ann-3" });
      expect(
        (await client.withTenant(tenant).ops.listGroupUsers({ params: { path: { group_uuid: staff.uuid } } })).total,
      ).toBe(0);
      expect(
        (await client.withTenant(tenant).ops.listUserPolicies({ params: { path: { user_uuid: ann.uuid } } })).total,
      ).toBe(0);
    }, 60_000);

    test("on a terminal, tables fit its width and headings are bold; piped, whole values and no colour", async () => {
      const command = ["src/cli.ts", "users", "list", "--recurse"];
      const quoted = [process.execPath, ...command].map((a) => `'${a}'`).join(" ");
      // `script` gives the command a real terminal of 60 columns.
      // Without CI: cli-table3's colour library turns colours off whenever CI is set (as .ci/run does).
      const { CI: _ci, ...outsideCi } = process.env;
      const p = Bun.spawn(["script", "-qec", `stty cols 60; ${quoted}`, "/dev/null"], {
        cwd: repoRoot,
        env: { ...outsideCi, ...env, ...admin },
        stdout: "pipe",
        stderr: "pipe",
      });
      const [tty, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
      expect(code).toBe(0);
      const lines = tty
        .replace(/\x1b\[[0-9;]*m/g, "")
        .split(/\r?\n/)
        .filter(Boolean);
      expect(lines.length).toBeGreaterThan(3);
      expect(Math.max(...lines.map((l) => Bun.stringWidth(l)))).toBeLessThanOrEqual(60);
      expect(tty).toMatch(/\x1b\[1m uuid/); // bold headings
      const piped = await tessera(command.slice(1), admin);
      expect(piped.out).not.toContain("\x1b[");
      const ann = await userNamed("ann");
      expect(piped.out).toContain(ann.uuid); // whole, unwrapped
      expect(Math.max(...piped.out.split("\n").map((l) => l.length))).toBeGreaterThan(60);
      const all = await tessera(["users", "list", "--all", "--recurse"], admin);
      expect(all.err).toBe(""); // no progress bar off a terminal
    }, 60_000);
  });
}
