// The grant rule as an invariant, not a list of routes (issue 22, item 1). A hostile tenant
// administrator with a random ACL (deny entries too) drives random sequences of every route that can
// change what ACL a user ends up with; after each step, no user's effective ACL — what a login would
// put in its token — has gained an entry the caller could not have granted (nor lost a `!x` whose
// `x` it could not grant), and no user outside the caller's tenants has changed at all.
import { expect, test } from "bun:test";
import fc from "fast-check";
import { inArray } from "drizzle-orm";
import { grantCheck } from "../../src/domain/acl-grant.ts";
import { oidcClients } from "../../src/db/schema.ts";
import { describeEachDb, type TestApp, type TestResponse } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { aclSnapshot, effectiveAcl, ungranted } from "../helpers/grant.ts";
import { basicAuth } from "../helpers/service-process.ts";

const DEFAULT_POLICY = "tessera_default_user";
const VOCABULARY = [
  "#",
  "confd.#",
  "confd.users.#",
  "confd.users.*.read",
  "confd.users.me.read",
  "confd.admin.#",
  "confd.admin.secret",
  "calld.#",
  "calld.calls.read",
  "auth.users.read",
  "auth.#",
  "x.*.y.edit",
];
const entry = fc.oneof(
  fc.constantFrom(...VOCABULARY),
  fc.constantFrom(...VOCABULARY).map((e) => `!${e}`),
);
const acl = fc.uniqueArray(entry, { minLength: 1, maxLength: 4 });
/** The caller: a tenant administrator (`auth.#`) with random extra allows and denies, none of them on `auth`. */
const callerAcl = fc
  .uniqueArray(
    fc.oneof(
      fc.constantFrom(...VOCABULARY.filter((e) => e !== "auth.#")),
      fc.constantFrom(...VOCABULARY.filter((e) => !e.startsWith("auth") && e !== "#")).map((e) => `!${e}`),
    ),
    { minLength: 1, maxLength: 4 },
  )
  .map((extra) => ["auth.#", ...extra]);

const KINDS = [
  "createPolicy",
  "updatePolicy",
  "addAccess",
  "removeAccess",
  "deletePolicy",
  "userPolicy",
  "groupPolicy",
  "groupUser",
  "createGroup",
  "deleteGroup",
  "moveTenant",
  "purpose",
  "createClient",
  "updateClient",
] as const;
/** Links (what changes ACLs) drawn more often than the rest. */
const kind = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "groupUser",
      "groupPolicy",
      "userPolicy",
      "addAccess",
      "removeAccess",
      "updatePolicy",
      "updateClient",
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom(...KINDS) },
);
const action = fc.record({
  kind,
  i: fc.nat(),
  j: fc.nat(),
  attach: fc.boolean(),
  acl,
  entry,
  child: fc.boolean(),
  defaultName: fc.boolean(),
});
type Action = typeof action extends fc.Arbitrary<infer A> ? A : never;

interface Run {
  t: TestApp;
  token: string;
  tenants: { t: string; t2: string; t3: string };
  users: string[];
  policies: Array<{ uuid: string; name: string }>;
  groups: string[];
  /** Users outside the caller's tenants: their ACL never changes. */
  outsiders: string[];
  /** OpenID Connect clients (their `acl` is what their client-credentials tokens carry). */
  clients: string[];
  /** A client of another tenant: its ACL never changes. */
  foreignClient: string;
}

/** Every client's ACL, as its client-credentials token would carry it. */
async function clientAcls(t: TestApp, ids: string[]): Promise<Map<string, string[]>> {
  const rows = ids.length ? await t.app.db.select().from(oidcClients).where(inArray(oidcClients.clientId, ids)) : [];
  return new Map(rows.map((r) => [r.clientId, r.acl]));
}

const uniq = () => crypto.randomUUID().slice(0, 8);

const pick = <T>(xs: T[], i: number): T | undefined => (xs.length ? xs[i % xs.length] : undefined);

async function perform(run: Run, a: Action): Promise<TestResponse | null> {
  const { t, token } = run;
  const tenant = a.child ? run.tenants.t2 : undefined;
  const h = { token, tenant };
  const p = pick(run.policies, a.i);
  const g = pick(run.groups, a.j);
  const u = pick(run.users, a.j);
  const ok = (r: TestResponse) => r.status < 300;
  switch (a.kind) {
    case "createPolicy": {
      const name = a.defaultName ? DEFAULT_POLICY : `p${uniq()}`;
      const r = await t.request("POST", "/0.1/policies", { ...h, body: { name, acl: a.acl, shared: a.attach } });
      if (ok(r)) run.policies.push({ uuid: r.json.uuid, name });
      return r;
    }
    case "updatePolicy":
      return p ? t.request("PUT", `/0.1/policies/${p.uuid}`, { ...h, body: { name: p.name, acl: a.acl } }) : null;
    case "addAccess":
    case "removeAccess":
      return p
        ? t.request(
            a.kind === "addAccess" ? "PUT" : "DELETE",
            `/0.1/policies/${p.uuid}/acl/${encodeURIComponent(a.entry)}`,
            h,
          )
        : null;
    case "deletePolicy":
      return p ? t.request("DELETE", `/0.1/policies/${p.uuid}`, h) : null;
    case "userPolicy":
      return p && u ? t.request(a.attach ? "PUT" : "DELETE", `/0.1/users/${u}/policies/${p.uuid}`, h) : null;
    case "groupPolicy":
      return p && g ? t.request(a.attach ? "PUT" : "DELETE", `/0.1/groups/${g}/policies/${p.uuid}`, h) : null;
    case "groupUser":
      return g && u ? t.request(a.attach ? "PUT" : "DELETE", `/0.1/groups/${g}/users/${u}`, h) : null;
    case "createGroup": {
      const r = await t.request("POST", "/0.1/groups", { ...h, body: { name: `g${uniq()}` } });
      if (ok(r)) run.groups.push(r.json.uuid);
      return r;
    }
    case "deleteGroup":
      return g ? t.request("DELETE", `/0.1/groups/${g}`, h) : null;
    case "moveTenant": {
      const { t: top, t2, t3 } = run.tenants;
      const [moved, parent] = a.attach ? [t2, t3] : [t2, top];
      return t.request("PUT", `/0.1/tenants/${moved}/parent/${parent}`, h);
    }
    case "createClient": {
      const r = await t.request("POST", "/0.1/oidc/clients", {
        ...h,
        body: { name: `c${uniq()}`, client_type: "confidential", grant_types: ["client_credentials"], acl: a.acl },
      });
      if (ok(r)) run.clients.push(r.json.client_id);
      return r;
    }
    case "updateClient": {
      const c = pick([...run.clients, run.foreignClient], a.i);
      return c
        ? t.request("PUT", `/0.1/oidc/clients/${c}`, {
            ...h,
            body: { name: `c${uniq()}`, grant_types: ["client_credentials"], acl: a.acl },
          })
        : null;
    }
    case "purpose":
      return u
        ? t.request("PUT", `/0.1/users/${u}`, {
            ...h,
            body: { username: `n${uniq()}`, purpose: (["user", "internal", "external_api"] as const)[a.i % 3] },
          })
        : null;
  }
}

describeEachDb(
  "grant invariant",
  (get) => {
    test("random sequences of every ACL-changing route never give a user what the caller could not grant", async () => {
      const t = get();
      const root = (await tokenFor(t.app, { acl: ["#"] })).token;
      const masterAdmin = await createUserRow(t.app);
      const as = (tenant: string) => ({ token: root, tenant });
      const policyIn = async (tenant: string, policyAcl: string[], shared = false) => {
        const name = `p${uniq()}`;
        const r = await t.request("POST", "/0.1/policies", { ...as(tenant), body: { name, acl: policyAcl, shared } });
        if (r.status !== 200) throw new Error(r.text);
        return { uuid: r.json.uuid as string, name };
      };
      const groupIn = async (tenant: string) =>
        (await t.request("POST", "/0.1/groups", { ...as(tenant), body: { name: `g${uniq()}` } })).json.uuid as string;
      const allUsers = async (tenant: string) =>
        (await t.request("GET", "/0.1/groups?read_only=true", as(tenant))).json.items[0].uuid as string;
      const link = async (path: string, tenant: string) => {
        const r = await t.request("PUT", path, as(tenant));
        if (r.status !== 204) throw new Error(`${path}: ${r.text}`);
      };
      const managed = (await t.request("GET", "/0.1/policies?slug=tessera_managed", { token: root })).json.items[0];
      const stats = { allowed: 0, refused: 0, changedAcl: 0, changedClientAcl: 0 };

      await fc.assert(
        fc.asyncProperty(
          callerAcl,
          acl,
          acl,
          acl,
          acl,
          fc.array(action, { minLength: 8, maxLength: 24 }),
          async (callerEntries, acl1, acl2, acl3, aclShared, actions) => {
            const top = await createTenantRow(t.app);
            const t2 = await createTenantRow(t.app, { parentUuid: top });
            const t3 = await createTenantRow(t.app, { parentUuid: top });
            const other = await createTenantRow(t.app);
            const me = await tokenFor(t.app, { acl: callerEntries, tenantUuid: top });
            const u1 = await createUserRow(t.app, { tenantUuid: top });
            const u2 = await createUserRow(t.app, { tenantUuid: t2 });
            const stranger = await createUserRow(t.app, { tenantUuid: other });
            // What others prepared: policies, groups and members the caller did not make.
            const [p1, p2, p3, shared, foreign] = [
              await policyIn(top, acl1),
              await policyIn(top, acl2),
              await policyIn(t2, acl3),
              await policyIn(t.app.topTenantUuid, aclShared, true),
              await policyIn(other, ["#"]),
            ];
            const [g1, g2, gOther, all1, all2] = [
              await groupIn(top),
              await groupIn(t2),
              await groupIn(other),
              await allUsers(top),
              await allUsers(t2),
            ];
            await link(`/0.1/groups/${g1}/policies/${p1.uuid}`, top);
            await link(`/0.1/groups/${g1}/users/${u1}`, top);
            await link(`/0.1/groups/${g2}/policies/${p3.uuid}`, t2);
            await link(`/0.1/groups/${g2}/users/${u2}`, t2);
            await link(`/0.1/users/${u1}/policies/${p2.uuid}`, top);
            await link(`/0.1/groups/${all1}/policies/${shared.uuid}`, top);
            await link(`/0.1/groups/${gOther}/policies/${foreign.uuid}`, other);
            await link(`/0.1/groups/${gOther}/users/${stranger}`, other);
            const client = async (tenantUuid: string, clientAcl: string[]) => {
              const r = await t.request("POST", "/0.1/oidc/clients", {
                ...as(tenantUuid),
                body: {
                  name: `c${uniq()}`,
                  client_type: "confidential",
                  grant_types: ["client_credentials"],
                  acl: clientAcl,
                },
              });
              if (r.status !== 201) throw new Error(r.text);
              return r.json.client_id as string;
            };
            const run: Run = {
              t,
              token: me.token,
              tenants: { t: top, t2, t3 },
              users: [me.userUuid, u1, u2, stranger],
              policies: [p1, p2, p3, shared, foreign, { uuid: managed.uuid, name: managed.name }],
              groups: [g1, g2, all1, all2, gOther],
              outsiders: [stranger, masterAdmin],
              clients: [await client(top, acl1)],
              foreignClient: await client(other, ["#"]),
            };
            const rule = grantCheck(callerEntries, { authId: me.userUuid, sessionUuid: me.sessionUuid });
            const inside = [me.userUuid, u1, u2];
            let before = await aclSnapshot(t, [...inside, ...run.outsiders]);
            let clientsBefore = await clientAcls(t, [...run.clients, run.foreignClient]);
            for (const a of actions) {
              const r = await perform(run, a);
              if (r && r.status >= 500) throw new Error(`${a.kind}: ${r.status} ${r.text}`);
              if (r)
                r.status < 300
                  ? stats.allowed++
                  : r.status === 403 && r.json.details?.required_access
                    ? stats.refused++
                    : undefined;
              const after = await aclSnapshot(t, [...inside, ...run.outsiders]);
              for (const u of inside) {
                const bad = ungranted(rule, before.get(u)!, after.get(u)!);
                if (bad.length)
                  throw new Error(
                    `${a.kind} gave ${u === me.userUuid ? "the caller" : "a user"} ${JSON.stringify(bad)} (caller ACL ${JSON.stringify(callerEntries)}, answer ${r?.status})`,
                  );
                if (JSON.stringify(before.get(u)) !== JSON.stringify(after.get(u))) stats.changedAcl++;
              }
              for (const u of run.outsiders) expect([a.kind, after.get(u)]).toEqual([a.kind, before.get(u)]);
              before = after;
              const clientsAfter = await clientAcls(t, [...run.clients, run.foreignClient]);
              for (const c of run.clients) {
                const bad = ungranted(rule, clientsBefore.get(c) ?? [], clientsAfter.get(c) ?? []);
                if (bad.length)
                  throw new Error(
                    `${a.kind} gave a client ${JSON.stringify(bad)} (caller ACL ${JSON.stringify(callerEntries)})`,
                  );
                if (JSON.stringify(clientsBefore.get(c)) !== JSON.stringify(clientsAfter.get(c)))
                  stats.changedClientAcl++;
              }
              expect([a.kind, clientsAfter.get(run.foreignClient)]).toEqual([a.kind, ["#"]]);
              clientsBefore = clientsAfter;
            }
          },
        ),
        { seed: 2222, numRuns: 14, endOnFailure: true },
      );
      // Not vacuous: the runs changed ACLs, and the rule refused some changes naming the entry.
      expect(stats.allowed).toBeGreaterThan(20);
      expect(stats.refused).toBeGreaterThan(20);
      expect(stats.changedAcl).toBeGreaterThan(10);
      expect(stats.changedClientAcl).toBeGreaterThan(1);
    }, 120_000);

    test("the effective ACL the invariant checks is the one a login puts in the token", async () => {
      const t = get();
      const root = (await tokenFor(t.app, { acl: ["#"] })).token;
      const tenant = await createTenantRow(t.app);
      const username = `login${uniq()}`;
      const user = await createUserRow(t.app, { tenantUuid: tenant, username, password: "pw-secret" });
      const p = (
        await t.request("POST", "/0.1/policies", {
          token: root,
          tenant,
          body: { name: `p${uniq()}`, acl: ["confd.users.me.read", "!calld.#"] },
        })
      ).json;
      const g = (await t.request("POST", "/0.1/groups", { token: root, tenant, body: { name: `g${uniq()}` } })).json
        .uuid;
      await t.request("PUT", `/0.1/groups/${g}/policies/${p.uuid}`, { token: root, tenant });
      await t.request("PUT", `/0.1/groups/${g}/users/${user}`, { token: root, tenant });
      const login = await t.request("POST", "/0.1/token", { body: {}, headers: basicAuth(username, "pw-secret") });
      expect(login.status).toBe(200);
      expect(login.json.data.acl).toEqual(await effectiveAcl(t, user));
      // auth.users.me.mfa.#: mfa.self_service's entry, added to a user's login token
      expect([...login.json.data.acl].sort()).toEqual([
        "!calld.#",
        "auth.users.me.mfa.#",
        "confd.default.read",
        "confd.users.me.read",
      ]);
    });
  },
  {
    config: {
      default_user_policy: DEFAULT_POLICY,
      default_policies: {
        [DEFAULT_POLICY]: { acl: ["confd.default.read"] },
        tessera_managed: { acl: ["confd.#", "!confd.admin.#"] },
      },
    },
  },
);
