// The CLI as an operator uses it all week, on the real process: users named by username or email
// wherever a user is taken, `audit list`, plain output off a terminal, and `tessera login` — one
// stored session (0600) reused by later commands, refreshed once expired, revoked by `logout`.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTesseraClient, type TesseraClient } from "../../clients/typescript/index.ts";
import { plainUnlessTerminal } from "../../src/cli/output.ts";
import { CliService, cliKinds } from "../helpers/cli-service.ts";

test("colours: kept on a terminal, dropped under NO_COLOR (https://no-color.org) and off a terminal", () => {
  const bold = "\x1b[1mname\x1b[0m";
  const terminal = { isTTY: true } as NodeJS.WriteStream;
  const saved = process.env.NO_COLOR;
  try {
    delete process.env.NO_COLOR;
    expect(plainUnlessTerminal(bold, terminal)).toBe(bold);
    expect(plainUnlessTerminal(bold, { isTTY: false } as NodeJS.WriteStream)).toBe("name");
    process.env.NO_COLOR = "1";
    expect(plainUnlessTerminal(bold, terminal)).toBe("name");
  } finally {
    if (saved === undefined) delete process.env.NO_COLOR;
    else process.env.NO_COLOR = saved;
  }
});

for (const kind of cliKinds()) {
  describe(`the CLI day to day [${kind}]`, () => {
    const svc = new CliService(kind, "cli-day", (dir) => ({
      XDG_CONFIG_HOME: join(dir, "xdg"),
      TESSERA_AUTH_USER: "",
      TESSERA_AUTH_PASSWORD: "",
      TESSERA_TOKEN: "",
      TESSERA_CLI_SESSIONS: "",
    }));
    const { dir, url, admin, tessera } = svc;
    const sessionsFile = join(dir, "xdg", "tessera", "sessions.json");
    let client: TesseraClient;
    let bob = "";
    let tenant = "";

    const adminLogins = async () =>
      (
        (await client.call("listAudit", {
          params: { query: { action: "login.success", limit: 500 } as never },
        })) as { items: Array<{ target: { uuid: string | null } }> }
      ).items.length;

    beforeAll(async () => {
      client = await svc.start();
      tenant = (await client.ops.createTenant({ body: { name: "voip" } })).uuid;
      bob = (
        await client
          .withTenant(tenant)
          .ops.createUser({ body: { username: "Bob", password: "pw-bob-1", email_address: "bob@voip.example" } })
      ).uuid;
      await client.withTenant(tenant).ops.createUser({ body: { username: "bobby", password: "pw-bobby-1" } });
    }, 120_000);

    afterAll(() => svc.stop());

    test("a user is named by UUID, username (any case) or email wherever the CLI takes one", async () => {
      for (const ref of [bob, "bob", "BOB", "bob@voip.example"]) {
        const shown = await tessera(["users", "show", ref, "--json"], admin);
        expect([shown.code, JSON.parse(shown.out || "{}").uuid]).toEqual([0, bob]);
      }
      const unknown = await tessera(["users", "show", "nobody"], admin);
      expect([unknown.code, unknown.err]).toEqual([1, expect.stringContaining('no user named "nobody"')]);
      // A search match is not a name: "bo" matches both, names neither.
      expect((await tessera(["users", "show", "bo"], admin)).code).toBe(1);
      const mfa = await tessera(["users", "mfa", "show", "bob", "--json"], admin);
      expect([mfa.code, JSON.parse(mfa.out || "{}").passkeys]).toEqual([0, 0]);
      const voip = client.withTenant(tenant);
      const group = (await voip.ops.createGroup({ body: { name: "night-shift" } })).uuid;
      const added = await tessera(["groups", "add-user", group, "bob@voip.example"], {
        ...admin,
        TESSERA_TENANT: tenant,
      });
      expect([added.code, added.err]).toEqual([0, ""]);
      const members = await voip.ops.listGroupUsers({ params: { path: { group_uuid: group } } });
      expect(members.items.map((u) => u.uuid)).toEqual([bob]);
      const set = await tessera(["users", "set-password", "bob", "--password", "pw-bob-2"], admin);
      expect(set.code).toBe(0);
      await createTesseraClient({ baseUrl: url }).login({ username: "bob", password: "pw-bob-2" });
      const sessions = await tessera(["sessions", "list", "--user", "bob", "--json"], admin);
      expect([sessions.code, JSON.parse(sessions.out || "{}").total]).toEqual([0, 1]);
      const acted = await tessera(["audit", "list", "--actor", "bob", "--recurse", "--json"], admin);
      expect(acted.code).toBe(0);
      expect(
        (JSON.parse(acted.out) as Array<{ actor: { user_uuid: string } }>).map((e) => e.actor.user_uuid),
      ).toContain(bob);
    }, 90_000);

    test("`audit list` lists, as the help says (and the bare `audit` still does)", async () => {
      const listed = await tessera(["audit", "list", "--action", "user.password.*", "--recurse", "--json"], admin);
      expect(listed.code).toBe(0);
      expect((JSON.parse(listed.out) as Array<{ action: string }>).map((e) => e.action)).toContain("user.password.set");
      const table = await tessera(["audit", "list", "--limit", "3"], admin);
      expect([table.code, table.out]).toEqual([0, expect.stringContaining("action")]);
      expect((await tessera(["audit", "--json"], admin)).code).toBe(0);
    }, 60_000);

    test("off a terminal, neither output nor errors carry ANSI colours", async () => {
      const unknown = await tessera(["nosuch"]);
      expect(unknown.code).toBe(2);
      expect(unknown.err).toContain("Unknown command nosuch");
      const listed = await tessera(["users", "list"], admin);
      for (const text of [unknown.out, unknown.err, listed.out, listed.err]) expect(text).not.toContain("\x1b[");
    }, 60_000);

    test("`tessera login` stores one session (0600) reused by later commands, refreshed, revoked by logout", async () => {
      const none = await tessera(["users", "list"]);
      expect([none.code, none.err]).toEqual([2, expect.stringContaining("tessera login")]);
      const before = await adminLogins();
      const login = await tessera(["login"], admin);
      expect([login.code, login.out]).toEqual([0, expect.stringContaining("logged in as admin")]);
      expect(statSync(sessionsFile).mode & 0o777).toBe(0o600);
      const stored = JSON.parse(readFileSync(sessionsFile, "utf8"))[url];
      expect([typeof stored.token, typeof stored.refresh_token]).toEqual(["string", "string"]);
      for (const args of [
        ["users", "list"],
        ["users", "show", "bob"],
        ["audit", "list"],
      ])
        expect((await tessera(args)).code).toBe(0);
      // One login for the four commands (each used to log in, and revoke, on its own).
      expect(await adminLogins()).toBe(before + 1);
      expect(await client.isTokenValid(stored.token)).toBe(true);

      // Once expired, the next command refreshes the token and stores the new one.
      writeFileSync(sessionsFile, JSON.stringify({ [url]: { ...stored, expires_at: "2000-01-01T00:00:00Z" } }));
      expect((await tessera(["users", "show", "bob"])).code).toBe(0);
      const refreshed = JSON.parse(readFileSync(sessionsFile, "utf8"))[url];
      expect(refreshed.token).not.toBe(stored.token);
      expect(await client.isTokenValid(refreshed.token)).toBe(true);

      // Per-command credentials still win over the stored session.
      expect((await tessera(["users", "list", "--token", "not-a-token"])).code).toBe(1);

      const logout = await tessera(["logout"]);
      expect([logout.code, logout.out]).toEqual([0, expect.stringContaining("logged out")]);
      expect(await client.isTokenValid(refreshed.token)).toBe(false);
      const renewed = await createTesseraClient({ baseUrl: url })
        .refresh({ refreshToken: stored.refresh_token, clientId: "tessera-cli" })
        .catch((e) => e);
      expect(renewed.status).toBe(401);
      expect((await tessera(["users", "list"])).code).toBe(2);
    }, 90_000);
  });
}
