// The audit trail as a tenant administrator sees it (docs/audit.md): a refused login whose name names a
// user (wrong password, throttled, second factor required or wrong) is recorded on that user, in their
// tenant, so their administrators see it; a name that names nobody stays the master tenant's; another
// tenant's administrator learns nothing either way. `search` matches the actor's and the target's
// uuids; an ancestor tenant's administrator is shown by uuid, never their address or user agent.
import { expect, test } from "bun:test";
import type { AuditItem as Item } from "../../src/services/audit/item.ts";
import { currentCode } from "../../src/services/auth/totp.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createUserRow, tenantFamily, tokenFor } from "../helpers/fixtures.ts";

const MFA_KEY = Buffer.alloc(32, 9).toString("base64");
const basic = (login: string, password: string) => ({
  Authorization: `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`,
});

async function trail(t: TestApp, token: string, query = ""): Promise<{ items: Item[]; total: number }> {
  const r = await t.request("GET", `/0.1/audit?recurse=true&limit=1000&${query}`, { token });
  expect(r.status).toBe(200);
  return r.json;
}

const login = (t: TestApp, name: string, password: string, remoteAddr: string, body: object = {}) =>
  t.request("POST", "/0.1/token", { headers: basic(name, password), body, remoteAddr });

describeEachDb(
  "audit: what a tenant administrator sees",
  (get) => {
    test("refused logins of a tenant's user are in that tenant's trail; another tenant's administrator sees nothing", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      const master = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
      const name = `tv-${crypto.randomUUID().slice(0, 8)}`;
      const user = await createUserRow(t.app, { tenantUuid: fam.tenant, username: name, password: "Pw-right-1" });
      const siblingBefore = await trail(t, fam.siblingAdmin);
      const childBefore = await trail(t, fam.childAdmin);

      // Wrong passwords until throttled, from the attacker's address.
      expect((await login(t, name, "wrong-1", "198.51.100.1")).status).toBe(401);
      expect((await login(t, name, "wrong-2", "198.51.100.1")).status).toBe(401);
      expect((await login(t, name, "wrong-3", "198.51.100.1")).status).toBe(429);
      // A login name that names nobody.
      const nobody = `nobody-${crypto.randomUUID().slice(0, 8)}`;
      expect((await login(t, nobody, "wrong", "198.51.100.2")).status).toBe(401);

      const mine = (await trail(t, fam.admin)).items.filter((e) => e.action.startsWith("login."));
      expect(mine.map((e) => [e.action, e.outcome]).sort()).toEqual([
        ["login.failure", "invalid_credentials"],
        ["login.failure", "invalid_credentials"],
        ["login.throttled", "throttled"],
      ]);
      for (const e of mine) {
        expect(e.target).toEqual({ kind: "user", uuid: user, tenant_uuid: fam.tenant });
        // Who tried: nobody authenticated, from the attacker's address, the name tried.
        expect(e.actor).toMatchObject({ user_uuid: null, tenant_uuid: null, address: "198.51.100.1" });
        expect(e.changes).toEqual([{ field: "login", old: null, new: name }]);
      }
      // The unknown name stays the master tenant's.
      const masterView = await trail(t, master, `search=${nobody}`);
      expect(masterView.items.map((e) => [e.action, e.target.kind, e.target.uuid])).toEqual([
        ["login.failure", "login", null],
      ]);
      expect(JSON.stringify(await trail(t, fam.admin))).not.toContain(nobody);
      // Neither a sibling tenant's nor a sub-tenant's administrator learns anything: their trails did not move.
      expect(await trail(t, fam.siblingAdmin)).toEqual(siblingBefore);
      expect(await trail(t, fam.childAdmin)).toEqual(childBefore);
    });

    test("second factor required, then wrong: both on the user, in their tenant", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      const name = `tvm-${crypto.randomUUID().slice(0, 8)}`;
      const user = await createUserRow(t.app, { tenantUuid: fam.child, username: name, password: "Pw-mfa-1" });
      const self = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: user, tenantUuid: fam.child }))
        .token;
      const secret: string = (await t.request("POST", "/0.1/users/me/mfa/totp", { token: self })).json.secret;
      const confirmed = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
        token: self,
        body: { code: currentCode(secret) },
      });
      expect(confirmed.status).toBe(200);
      const siblingBefore = await trail(t, fam.siblingAdmin);
      expect((await login(t, name, "Pw-mfa-1", "198.51.100.3")).json.error_id).toBe("mfa-required");
      const valid = new Set([-1, 0, 1].map((o) => currentCode(secret, Date.now() + o * 30_000)));
      const wrong = ["000000", "111111", "222222", "333333"].find((c) => !valid.has(c))!;
      expect((await login(t, name, "Pw-mfa-1", "198.51.100.3", { mfa_code: wrong })).status).toBe(401);
      // The child's administrator and the parent's (recursing) both see them.
      for (const admin of [fam.childAdmin, fam.admin]) {
        const seen = (await trail(t, admin, `target_uuid=${user}`)).items.filter((e) => e.action.startsWith("login."));
        expect(seen.map((e) => [e.action, e.outcome, e.target.tenant_uuid, e.actor.address]).sort()).toEqual([
          ["login.mfa_failed", "mfa_invalid", fam.child, "198.51.100.3"],
          ["login.mfa_required", "mfa_required", fam.child, "198.51.100.3"],
        ]);
      }
      expect(await trail(t, fam.siblingAdmin)).toEqual(siblingBefore);
    });

    test("search matches the actor's and the target's uuid", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      const { token, userUuid: actor } = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: fam.tenant });
      const created = await t.request("POST", "/0.1/groups", { token, body: { name: "searched" } });
      expect(created.status).toBe(200);
      const group: string = created.json.uuid;
      const byTarget = await trail(t, fam.admin, `search=${group}`);
      expect(byTarget.items.map((e) => [e.action, e.target.uuid])).toEqual([["group.create", group]]);
      // A uuid's first part, as the console shows it, is enough.
      const byActor = await trail(t, fam.admin, `search=${actor.slice(0, 8)}`);
      expect(byActor.items.map((e) => [e.action, e.actor.user_uuid])).toEqual([["group.create", actor]]);
      // Another tenant's administrator finds nothing by it.
      expect((await trail(t, fam.siblingAdmin, `search=${group}`)).items).toEqual([]);
    });

    test("an ancestor tenant's administrator: their uuid, never their address, user agent or session", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      const root = await tokenFor(t.app, { acl: ["auth.#"] });
      const origin = { remoteAddr: "203.0.113.77", headers: { "User-Agent": "root-browser/1" } };
      const byRoot = await t.request("POST", "/0.1/groups", {
        token: root.token,
        tenant: fam.tenant,
        body: { name: "from-above" },
        ...origin,
      });
      expect(byRoot.status).toBe(200);
      const { token: own } = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: fam.tenant });
      const byOwn = await t.request("POST", "/0.1/groups", {
        token: own,
        body: { name: "from-here" },
        remoteAddr: "203.0.113.88",
        headers: { "User-Agent": "tenant-browser/1" },
      });
      expect(byOwn.status).toBe(200);
      const entryOf = async (token: string, group: string) =>
        (await trail(t, token, `target_uuid=${group}&action=group.create`)).items[0]!.actor;
      // The tenant's administrator sees who (the uuid) but not from where.
      expect(await entryOf(fam.admin, byRoot.json.uuid)).toEqual({
        user_uuid: root.userUuid,
        session_uuid: null,
        tenant_uuid: t.app.topTenantUuid,
        address: null,
        user_agent: null,
      });
      // ... nor can they find it by the address.
      expect((await trail(t, fam.admin, "search=203.0.113.77")).items).toEqual([]);
      // Their own administrator's origin, and a descendant's, they see.
      expect(await entryOf(fam.admin, byOwn.json.uuid)).toMatchObject({
        address: "203.0.113.88",
        user_agent: "tenant-browser/1",
      });
      expect((await trail(t, fam.admin, "search=203.0.113.88")).items.length).toBe(1);
      // The master tenant's administrator sees everything, scoping the sub-tenant or not.
      const masterView = { address: "203.0.113.77", user_agent: "root-browser/1", session_uuid: root.sessionUuid };
      expect(await entryOf(root.token, byRoot.json.uuid)).toMatchObject(masterView);
      const scoped = await t.request("GET", `/0.1/audit?target_uuid=${byRoot.json.uuid}`, {
        token: root.token,
        tenant: fam.tenant,
      });
      expect(scoped.json.items[0].actor).toMatchObject(masterView);
      expect((await trail(t, root.token, "search=203.0.113.77")).items.length).toBe(1);
    });

    test("after: an entry of another tenant is no anchor", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      const { token } = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: fam.sibling });
      expect((await t.request("POST", "/0.1/groups", { token, body: { name: "elsewhere" } })).status).toBe(200);
      const { token: own } = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: fam.tenant });
      expect((await t.request("POST", "/0.1/groups", { token: own, body: { name: "mine" } })).status).toBe(200);
      const foreign = (await trail(t, fam.siblingAdmin, "action=group.create")).items[0]!.uuid;
      const r = await t.request("GET", `/0.1/audit?after=${foreign}&direction=asc`, { token: fam.admin });
      expect([r.status, r.json.items]).toEqual([200, []]);
    });
  },
  { config: { mfa: { encryption_keys: [{ id: "k1", key: MFA_KEY }] }, login_throttling: { max_failures: 2 } } },
);
