// Regression tests of the audit's findings as a hostile tenant administrator (issue 10: 1–4, 9).
// Each one failed before its fix.
import { expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { emails, users } from "../../src/db/schema.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tenantFamily, tokenFor } from "../helpers/fixtures.ts";
import { basicAuth } from "../helpers/service-process.ts";

const uniq = () => crypto.randomUUID().slice(0, 8);

describeEachDb(
  "security findings",
  (get) => {
    test("1. a sub-tenant administrator cannot reset the master administrator's password", async () => {
      const t = get();
      const name = `root${uniq()}`;
      const root = await createUserRow(t.app, { username: name, password: "root-pw", purpose: "internal" });
      const { admin, child, tenant } = await tenantFamily(t.app);
      const before = (await t.app.db.select().from(users).where(eq(users.uuid, root)))[0]!;
      const r = await t.request("POST", `/0.1/users/password/reset?user_uuid=${root}`, {
        token: admin,
        body: { password: "pwned" },
      });
      expect([r.status, r.json.error_id, r.json.resource]).toEqual([404, "not-found", "users"]);
      const after = (await t.app.db.select().from(users).where(eq(users.uuid, root)))[0]!;
      expect(after.passwordHash).toBe(before.passwordHash);
      expect((await t.request("POST", "/0.1/token", { body: {}, headers: basicAuth(name, "pwned") })).status).toBe(401);
      expect((await t.request("POST", "/0.1/token", { body: {}, headers: basicAuth(name, "root-pw") })).status).toBe(
        200,
      );
      // a parent may still reset a user of its sub-tenant it can see
      const childUser = `kid${uniq()}`;
      await createUserRow(t.app, { tenantUuid: child, username: childUser, password: "old" });
      const kid = (await t.app.db.select().from(users).where(eq(users.username, childUser)))[0]!;
      expect(
        (
          await t.request("POST", `/0.1/users/password/reset?user_uuid=${kid.uuid}`, {
            token: admin,
            body: { password: "new-pw" },
          })
        ).status,
      ).toBe(204);
      expect(
        (await t.request("POST", "/0.1/token", { body: {}, headers: basicAuth(childUser, "new-pw") })).status,
      ).toBe(200);
      expect(tenant).toBeTruthy();
    });

    test("2. ACL entries of read-only policies (config-managed, shared from above) cannot be edited", async () => {
      const t = get();
      const { admin, childAdmin } = await tenantFamily(t.app);
      const managed = (await t.request("GET", "/0.1/policies?slug=tessera_managed", { token: admin })).json.items[0];
      expect(managed.read_only).toBe(true);
      const shared = (
        await t.request("POST", "/0.1/policies", {
          token: admin,
          body: { name: `shared${uniq()}`, acl: ["auth.users.read"], shared: true },
        })
      ).json;
      for (const p of [managed, shared]) {
        for (const [method, access] of [
          ["PUT", "auth.#"],
          ["PUT", "!auth.#"],
          ["DELETE", p.acl[0]],
        ] as const) {
          const r = await t.request(method, `/0.1/policies/${p.uuid}/acl/${encodeURIComponent(access)}`, {
            token: childAdmin,
          });
          expect([method, r.status, r.json.error_id]).toEqual([method, 403, "forbidden-policy"]);
        }
      }
      expect((await t.request("GET", `/0.1/policies/${managed.uuid}`, { token: admin })).json.acl).toEqual(managed.acl);
      expect((await t.request("GET", `/0.1/policies/${shared.uuid}`, { token: admin })).json.acl).toEqual([
        "auth.users.read",
      ]);
      // the owner may still edit its own shared policy
      expect(
        (await t.request("PUT", `/0.1/policies/${shared.uuid}/acl/auth.users.create`, { token: admin })).status,
      ).toBe(204);
    });

    test("3. an address of another tenant cannot be confirmed by uuid", async () => {
      const t = get();
      const { admin, siblingAdmin, tenant, childAdmin } = await tenantFamily(t.app);
      const user = await createUserRow(t.app, { tenantUuid: tenant });
      const [email] = await t.app.db
        .insert(emails)
        .values({ address: `${uniq()}@x.org`, userUuid: user, main: true, confirmed: false })
        .returning();
      for (const who of [siblingAdmin, childAdmin]) {
        for (const method of ["PUT", "GET"]) {
          const r = await t.request(method, `/0.1/emails/${email!.uuid}/confirm`, { token: who });
          expect([r.status, r.json.error_id, r.json.resource]).toEqual([404, "not-found", "emails"]);
        }
      }
      expect((await t.app.db.select().from(emails).where(eq(emails.uuid, email!.uuid)))[0]!.confirmed).toBe(false);
      expect((await t.request("PUT", `/0.1/emails/${email!.uuid}/confirm`, { token: admin })).status).toBe(204);
      expect((await t.app.db.select().from(emails).where(eq(emails.uuid, email!.uuid)))[0]!.confirmed).toBe(true);
    });

    test("4. deny entries hold whatever the letter case of a uuid or slug", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const owner = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const slug = `Protected${uniq().slice(0, 3)}`;
      const p = (
        await t.request("POST", "/0.1/policies", { token: owner, body: { name: slug, slug, acl: ["auth.users.read"] } })
      ).json;
      const user = await createUserRow(t.app, { tenantUuid: tenant });
      const byUuid = (
        await tokenFor(t.app, {
          acl: [
            "auth.#",
            `!auth.policies.${p.uuid}.delete`,
            `!auth.policies.${p.uuid}.update`,
            `!auth.users.${user}.policies.${p.uuid}.create`,
          ],
          tenantUuid: tenant,
        })
      ).token;
      const bySlug = (
        await tokenFor(t.app, {
          acl: ["auth.#", `!auth.policies.${slug}.delete`, `!auth.users.${user}.policies.${slug}.create`],
          tenantUuid: tenant,
        })
      ).token;
      const attempts: Array<[string, string, string]> = [
        [byUuid, "DELETE", `/0.1/policies/${p.uuid.toUpperCase()}`],
        [byUuid, "DELETE", `/0.1/policies/${slug.toLowerCase()}`],
        [byUuid, "PUT", `/0.1/policies/${slug.toUpperCase()}/acl/auth.users.read`],
        [byUuid, "PUT", `/0.1/users/${user}/policies/${p.uuid.toUpperCase()}`],
        [byUuid, "PUT", `/0.1/users/${user.toUpperCase()}/policies/${slug}`],
        [bySlug, "DELETE", `/0.1/policies/${slug.toLowerCase()}`],
        [bySlug, "DELETE", `/0.1/policies/${p.uuid}`],
        [bySlug, "PUT", `/0.1/users/${user}/policies/${p.uuid}`],
      ];
      for (const [token, method, path] of attempts) {
        const r = await t.request(method, path, { token });
        expect([method, path, r.status]).toEqual([method, path, 403]);
      }
      expect((await t.request("GET", `/0.1/policies/${p.uuid}`, { token: owner })).status).toBe(200);
      expect((await t.request("GET", `/0.1/users/${user}/policies`, { token: owner })).json.total).toBe(0);
    });

    test("4. deny entries on `me` hold for the caller's own uuid, and the reverse", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const userUuid = await createUserRow(t.app, { tenantUuid: tenant });
      const { token } = await tokenFor(t.app, {
        acl: ["auth.#", `!auth.users.${userUuid}.tokens.read`],
        tenantUuid: tenant,
        userUuid,
      });
      expect((await t.request("GET", "/0.1/users/me/tokens", { token })).status).toBe(403);
      expect((await t.request("GET", `/0.1/users/${userUuid}/tokens`, { token })).status).toBe(403);
    });

    test("9. a caller cannot grant what its deny entries forbid", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const caller = (await tokenFor(t.app, { acl: ["auth.#", "confd.#", "!confd.admin.#"], tenantUuid: tenant }))
        .token;
      let r = await t.request("POST", "/0.1/policies", {
        token: caller,
        body: { name: `p${uniq()}`, acl: ["confd.#"] },
      });
      expect([r.status, r.json.error_id, r.json.details.required_access]).toEqual([403, "forbidden", "confd.#"]);
      r = await t.request("POST", "/0.1/policies", {
        token: caller,
        body: { name: `p${uniq()}`, acl: ["confd.*.read"] },
      });
      expect(r.status).toBe(403);
      r = await t.request("POST", "/0.1/policies", {
        token: caller,
        body: { name: `p${uniq()}`, acl: ["confd.users.#", "!confd.users.admin"] },
      });
      expect(r.status).toBe(200);
      // an existing broad policy made by someone else cannot be attached to another user either
      const owner = (await tokenFor(t.app, { acl: ["#"], tenantUuid: tenant })).token;
      const broad = (
        await t.request("POST", "/0.1/policies", { token: owner, body: { name: `b${uniq()}`, acl: ["confd.#"] } })
      ).json;
      const victim = await createUserRow(t.app, { tenantUuid: tenant });
      r = await t.request("PUT", `/0.1/users/${victim}/policies/${broad.uuid}`, { token: caller });
      expect(r.status).toBe(403);
      expect((await t.request("GET", `/0.1/users/${victim}/policies`, { token: owner })).json.total).toBe(0);
    });

    test("22.1 a tenant administrator cannot join (or leave) a group whose policies it could not grant", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const master = (await tokenFor(t.app, { acl: ["#"] })).token;
      const admin = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant });
      // a group of its tenant that holds `#` (prepared by the master administrator), and one with a deny entry
      const all = (
        await t.request("POST", "/0.1/policies", { token: master, tenant, body: { name: `all${uniq()}`, acl: ["#"] } })
      ).json;
      const admins = (
        await t.request("POST", "/0.1/groups", { token: master, tenant, body: { name: `admins${uniq()}` } })
      ).json.uuid;
      expect(
        (await t.request("PUT", `/0.1/groups/${admins}/policies/${all.uuid}`, { token: master, tenant })).status,
      ).toBe(204);
      expect(
        (await t.request("PUT", `/0.1/users/${admin.userUuid}/policies/${all.uuid}`, { token: admin.token })).status,
      ).toBe(403);
      let r = await t.request("PUT", `/0.1/groups/${admins}/users/${admin.userUuid}`, { token: admin.token });
      expect([r.status, r.json.error_id, r.json.resource, r.json.details.required_access]).toEqual([
        403,
        "forbidden",
        "groups",
        "#",
      ]);
      expect((await t.request("GET", `/0.1/groups/${admins}/users`, { token: master, tenant })).json.total).toBe(0);
      // leaving a group that denies lifts its deny: the same rule
      const muzzle = (
        await t.request("POST", "/0.1/policies", {
          token: master,
          tenant,
          body: { name: `muzzle${uniq()}`, acl: ["!confd.#"] },
        })
      ).json;
      const muzzled = (
        await t.request("POST", "/0.1/groups", { token: master, tenant, body: { name: `muzzled${uniq()}` } })
      ).json.uuid;
      await t.request("PUT", `/0.1/groups/${muzzled}/policies/${muzzle.uuid}`, { token: master, tenant });
      await t.request("PUT", `/0.1/groups/${muzzled}/users/${admin.userUuid}`, { token: master, tenant });
      for (const [method, path] of [
        ["DELETE", `/0.1/groups/${muzzled}/users/${admin.userUuid}`],
        ["DELETE", `/0.1/groups/${muzzled}`],
      ] as const) {
        r = await t.request(method, path, { token: admin.token });
        expect([path, r.status, r.json.details.required_access]).toEqual([path, 403, "!confd.#"]);
      }
      expect((await t.request("GET", `/0.1/groups/${muzzled}/users`, { token: master, tenant })).json.total).toBe(1);
      // what it may grant, it may still give: a group of `auth.users.read`
      const reader = (
        await t.request("POST", "/0.1/policies", {
          token: admin.token,
          body: { name: `reader${uniq()}`, acl: ["auth.users.read"] },
        })
      ).json;
      const readers = (
        await t.request("POST", "/0.1/groups", { token: admin.token, body: { name: `readers${uniq()}` } })
      ).json.uuid;
      await t.request("PUT", `/0.1/groups/${readers}/policies/${reader.uuid}`, { token: admin.token });
      expect(
        (await t.request("PUT", `/0.1/groups/${readers}/users/${admin.userUuid}`, { token: admin.token })).status,
      ).toBe(204);
      expect(
        (await t.request("DELETE", `/0.1/groups/${readers}/users/${admin.userUuid}`, { token: admin.token })).status,
      ).toBe(204);
    });

    test("22.1 a policy named like the default user policy, or given a configured slug, reaches no other tenant", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const name = `victim${uniq()}`;
      await createUserRow(t.app, { username: name, password: "pw-secret" });
      const before = (await t.request("POST", "/0.1/token", { body: {}, headers: basicAuth(name, "pw-secret") })).json
        .data.acl;
      expect([...before].sort()).toEqual(["auth.users.me.mfa.#", "confd.default.read"]); // the configured ACL, plus mfa.self_service's entry
      // deny everything to everyone: a deny entry anyone may grant, but only to its own tenant's users
      let r = await t.request("POST", "/0.1/policies", {
        token: admin,
        body: { name: "tessera_default_user", acl: ["!#", "auth.users.read"] },
      });
      expect(r.status).toBe(200);
      r = await t.request("POST", "/0.1/policies", {
        token: admin,
        body: { name: `x${uniq()}`, slug: "tessera_all_users", acl: ["!#"] },
      });
      expect(r.status).toBe(200);
      expect(
        [
          ...(await t.request("POST", "/0.1/token", { body: {}, headers: basicAuth(name, "pw-secret") })).json.data.acl,
        ].sort(),
      ).toEqual([...before].sort());
      // a tenant made afterwards does not get the sub-tenant's look-alike in its all-users group
      const master = (await tokenFor(t.app, { acl: ["#"] })).token;
      const fresh = (await t.request("POST", "/0.1/tenants", { token: master, body: { name: `fresh${uniq()}` } })).json
        .uuid;
      const allUsers = (await t.request("GET", "/0.1/groups?read_only=true", { token: master, tenant: fresh })).json
        .items[0].uuid;
      const attached = (await t.request("GET", `/0.1/groups/${allUsers}/policies`, { token: master, tenant: fresh }))
        .json.items;
      expect(attached.map((p: { tenant_uuid: string }) => p.tenant_uuid)).not.toContain(tenant);
    });

    test("22.1 a master-tenant administrator cannot rename a policy it could not grant into the default policy", async () => {
      const t = get();
      const master = (await tokenFor(t.app, { acl: ["#"] })).token;
      const admin = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
      const broad = (
        await t.request("POST", "/0.1/policies", { token: master, body: { name: `broad${uniq()}`, acl: ["#"] } })
      ).json;
      const r = await t.request("PUT", `/0.1/policies/${broad.uuid}`, {
        token: admin,
        body: { name: "tessera_backend_default", acl: ["#"] },
      });
      expect([r.status, r.json.details.required_access]).toEqual([403, "#"]);
      expect((await t.request("GET", `/0.1/policies/${broad.uuid}`, { token: master })).json.name).toBe(broad.name);
      const name = `bystander${uniq()}`;
      await createUserRow(t.app, { username: name, password: "pw-secret" });
      const login = await t.request("POST", "/0.1/token", {
        body: { backend: "tessera_backend" },
        headers: basicAuth(name, "pw-secret"),
      });
      expect(login.json.data.acl).toEqual(["auth.users.me.mfa.#"]); // mfa.self_service's entry only
      // what it may grant, it may still rename
      const mine = (
        await t.request("POST", "/0.1/policies", {
          token: admin,
          body: { name: `mine${uniq()}`, acl: ["auth.users.read"] },
        })
      ).json;
      expect(
        (
          await t.request("PUT", `/0.1/policies/${mine.uuid}`, {
            token: admin,
            body: { name: "tessera_backend_default", acl: ["auth.users.read"] },
          })
        ).status,
      ).toBe(204);
    });
  },
  {
    config: {
      default_user_policy: "tessera_default_user",
      backend_policies: { tessera_backend: "tessera_backend_default" },
      default_policies: {
        tessera_managed: { acl: ["confd.managed.read"] },
        tessera_default_user: { acl: ["confd.default.read"] },
      },
      all_users_policies: { tessera_all_users: true },
    },
  },
);
