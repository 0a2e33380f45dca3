import { expect, test } from "bun:test";
import { listRecordedEvents } from "../../src/services/events.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tenantFamily, tokenFor } from "../helpers/fixtures.ts";

const uniq = () => crypto.randomUUID().slice(0, 8);

describeEachDb("groups", (get) => {
  async function setup() {
    const t = get();
    return { t, ...(await tenantFamily(t.app)) };
  }

  test("CRUD with slugs, conflicts, the system group is protected", async () => {
    const { t, tenant, admin } = await setup();
    const r = await t.request("POST", "/0.1/groups", { token: admin, body: { name: "Sales Team" } });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      name: "Sales Team",
      slug: "SalesTeam",
      tenant_uuid: tenant,
      read_only: false,
      system_managed: false,
    });
    const g = r.json;
    let x = await t.request("POST", "/0.1/groups", { token: admin, body: { name: "Sales Team" } });
    expect([x.status, x.json.error_id]).toEqual([409, "conflict"]);
    x = await t.request("POST", "/0.1/groups", { token: admin, body: { name: "other", slug: "salesteam" } });
    expect(x.status).toBe(409);
    x = await t.request("POST", "/0.1/groups", { token: admin, body: { name: "" } });
    expect([x.status, x.json.details.name.constraint_id]).toEqual([400, "length"]);
    x = await t.request("POST", "/0.1/groups", { token: admin, body: { name: "n", slug: "bad slug" } });
    expect([x.status, x.json.details.slug.constraint_id]).toEqual([400, "regex"]);
    expect((await t.request("PUT", `/0.1/groups/${g.uuid}`, { token: admin, body: { name: "Sales" } })).status).toBe(
      204,
    );
    expect((await t.request("GET", `/0.1/groups/${g.uuid}`, { token: admin })).json).toMatchObject({
      name: "Sales",
      slug: "SalesTeam",
    });
    const list = await t.request("GET", "/0.1/groups?order=name", { token: admin });
    const system = list.json.items.find((i: { read_only: boolean }) => i.read_only);
    expect(system.name).toBe(`wazo-all-users-tenant-${tenant}`);
    x = await t.request("PUT", `/0.1/groups/${system.uuid}`, { token: admin, body: { name: "renamed" } });
    expect([x.status, x.json.error_id]).toEqual([403, "forbidden-group"]);
    expect((await t.request("DELETE", `/0.1/groups/${system.uuid}`, { token: admin })).status).toBe(403);
    expect((await t.request("GET", "/0.1/groups?order=slug", { token: admin })).status).toBe(400);
    expect((await t.request("DELETE", `/0.1/groups/${g.uuid}`, { token: admin })).status).toBe(204);
    expect((await t.request("DELETE", `/0.1/groups/${g.uuid}`, { token: admin })).status).toBe(204);
    const names = (await listRecordedEvents(t.app.db)).filter((e) => e.routingKey.includes(g.uuid)).map((e) => e.name);
    expect(names).toEqual(["auth_group_created", "auth_group_updated", "auth_group_deleted"]);
  });

  test("members: same tenant only, not in the system group, listed, idempotent", async () => {
    const { t, tenant, child, admin } = await setup();
    const g = (await t.request("POST", "/0.1/groups", { token: admin, body: { name: `m${uniq()}` } })).json;
    const user = await createUserRow(t.app, { tenantUuid: tenant });
    const childUser = await createUserRow(t.app, { tenantUuid: child });
    expect((await t.request("PUT", `/0.1/groups/${g.uuid}/users/${user}`, { token: admin })).status).toBe(204);
    expect((await t.request("PUT", `/0.1/groups/${g.uuid}/users/${user}`, { token: admin })).status).toBe(204);
    const r = await t.request("PUT", `/0.1/groups/${g.uuid}/users/${childUser}`, { token: admin });
    expect([r.status, r.json.error_id]).toEqual([400, "missmatching-tenant"]);
    const members = await t.request("GET", `/0.1/groups/${g.uuid}/users`, { token: admin });
    expect(members.json.items.map((u: { uuid: string }) => u.uuid)).toEqual([user]);
    expect(
      (await t.request("GET", `/0.1/users/${user}/groups?search=m`, { token: admin })).json.items.map(
        (x: { uuid: string }) => x.uuid,
      ),
    ).toEqual([g.uuid]);
    expect((await t.request("GET", `/0.1/users?group_uuid=${g.uuid}`, { token: admin })).json.filtered).toBe(1);
    expect((await t.request("DELETE", `/0.1/groups/${g.uuid}/users/${user}`, { token: admin })).status).toBe(204);
    expect((await t.request("GET", `/0.1/groups/${g.uuid}/users`, { token: admin })).json.total).toBe(0);
  });

  test("isolation: sibling and child admins see and change nothing; Wazo-Tenant reaches the child", async () => {
    const { t, tenant, child, admin, childAdmin, siblingAdmin } = await setup();
    const g = (await t.request("POST", "/0.1/groups", { token: admin, body: { name: `iso${uniq()}` } })).json;
    const user = await createUserRow(t.app, { tenantUuid: tenant });
    for (const who of [siblingAdmin, childAdmin]) {
      expect((await t.request("GET", `/0.1/groups/${g.uuid}`, { token: who })).status).toBe(404);
      expect((await t.request("PUT", `/0.1/groups/${g.uuid}`, { token: who, body: { name: "x" } })).status).toBe(404);
      expect((await t.request("GET", `/0.1/groups/${g.uuid}/users`, { token: who })).status).toBe(404);
      expect((await t.request("PUT", `/0.1/groups/${g.uuid}/users/${user}`, { token: who })).status).toBe(404);
      expect((await t.request("GET", `/0.1/groups/${g.uuid}/policies`, { token: who })).status).toBe(404);
      expect((await t.request("GET", `/0.1/users/${user}/groups`, { token: who })).status).toBe(404);
      expect((await t.request("DELETE", `/0.1/groups/${g.uuid}`, { token: who })).status).toBe(204);
      expect(
        (await t.request("GET", "/0.1/groups?recurse=true", { token: who })).json.items.map(
          (x: { uuid: string }) => x.uuid,
        ),
      ).not.toContain(g.uuid);
    }
    expect((await t.request("GET", `/0.1/groups/${g.uuid}`, { token: admin })).status).toBe(200);
    const inChild = await t.request("POST", "/0.1/groups", { token: admin, tenant: child, body: { name: "kid" } });
    expect(inChild.json.tenant_uuid).toBe(child);
  });
});

describeEachDb("policies", (get) => {
  async function setup() {
    const t = get();
    const family = await tenantFamily(t.app, ["auth.#", "confd.#"]);
    // the tenant's administrator is itself denied one access, to test the grant rules
    const admin = (await tokenFor(t.app, { acl: ["auth.#", "confd.#", "!confd.secret"], tenantUuid: family.tenant }))
      .token;
    return { t, ...family, admin };
  }

  test("CRUD by uuid and slug; full replacement; ACL entries", async () => {
    const { t, tenant, admin } = await setup();
    const r = await t.request("POST", "/0.1/policies", {
      token: admin,
      body: { name: "Users read", acl: ["confd.users.read", "confd.users.read", "!confd.x"] },
    });
    expect(r.status).toBe(200);
    const p = r.json;
    expect(p).toMatchObject({
      tenant_uuid: tenant,
      name: "Users read",
      slug: "Usersread",
      description: null,
      acl: ["!confd.x", "confd.users.read"],
      read_only: false,
      shared: false,
    });
    expect((await t.request("GET", `/0.1/policies/usersREAD`, { token: admin })).json.uuid).toBe(p.uuid);
    expect((await t.request("PUT", `/0.1/policies/${p.uuid}/acl/confd.lines.read`, { token: admin })).status).toBe(204);
    // already there: the desired state, a no-op
    let x = await t.request("PUT", `/0.1/policies/${p.uuid}/acl/confd.lines.read`, { token: admin });
    expect([x.status, x.text]).toEqual([204, ""]);
    expect(
      (await t.request("DELETE", `/0.1/policies/Usersread/acl/${encodeURIComponent("!confd.x")}`, { token: admin }))
        .status,
    ).toBe(204);
    expect((await t.request("GET", `/0.1/policies/${p.uuid}`, { token: admin })).json.acl).toEqual([
      "confd.lines.read",
      "confd.users.read",
    ]);
    expect(
      (await t.request("PUT", `/0.1/policies/${p.uuid}`, { token: admin, body: { name: "Renamed" } })).status,
    ).toBe(204);
    expect((await t.request("GET", `/0.1/policies/${p.uuid}`, { token: admin })).json).toMatchObject({
      name: "Renamed",
      slug: "Usersread",
      acl: [],
    });
    x = await t.request("POST", "/0.1/policies", { token: admin, body: { name: "Renamed" } });
    expect([x.status, x.json.error_id]).toEqual([409, "conflict"]);
    x = await t.request("POST", "/0.1/policies", { token: admin, body: { name: "x".repeat(81) } });
    expect([x.status, x.json.details.name.constraint_id]).toEqual([400, "length"]);
    x = await t.request("POST", "/0.1/policies", { token: admin, body: { name: "n", acl: "confd.#" } });
    expect([x.status, x.json.details.acl.constraint_id]).toEqual([400, "type"]);
    expect((await t.request("DELETE", `/0.1/policies/${p.uuid}`, { token: admin })).status).toBe(204);
    expect((await t.request("GET", `/0.1/policies/${p.uuid}`, { token: admin })).status).toBe(404);
    expect((await t.request("DELETE", `/0.1/policies/${p.uuid}`, { token: admin })).status).toBe(204);
  });

  test("grant rules: no access the caller lacks, negatives always allowed", async () => {
    const { t, admin } = await setup();
    let r = await t.request("POST", "/0.1/policies", {
      token: admin,
      body: { name: `g${uniq()}`, acl: ["calld.calls.read"] },
    });
    expect([r.status, r.json.error_id, r.json.details.required_access]).toEqual([403, "forbidden", "calld.calls.read"]);
    r = await t.request("POST", "/0.1/policies", { token: admin, body: { name: `g${uniq()}`, acl: ["confd.secret"] } });
    expect(r.status).toBe(403);
    r = await t.request("POST", "/0.1/policies", {
      token: admin,
      body: { name: `g${uniq()}`, acl: ["!calld.calls.read", "confd.users.read"] },
    });
    expect(r.status).toBe(200);
    const p = r.json;
    expect((await t.request("PUT", `/0.1/policies/${p.uuid}/acl/calld.x`, { token: admin })).status).toBe(403);
    // removing !calld... requires holding calld...
    expect(
      (
        await t.request("PUT", `/0.1/policies/${p.uuid}`, {
          token: admin,
          body: { name: p.name, acl: ["confd.users.read"] },
        })
      ).status,
    ).toBe(403);
    expect((await t.request("DELETE", `/0.1/policies/${p.uuid}`, { token: admin })).status).toBe(403);
    const user = await createUserRow(t.app, {
      tenantUuid: (await t.request("GET", `/0.1/policies/${p.uuid}`, { token: admin })).json.tenant_uuid,
    });
    expect((await t.request("PUT", `/0.1/users/${user}/policies/${p.uuid}`, { token: admin })).status).toBe(204);
    const weak = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: p.tenant_uuid })).token;
    expect((await t.request("DELETE", `/0.1/users/${user}/policies/${p.uuid}`, { token: weak })).status).toBe(403);
  });

  test("user and group links; the token of a user carries its group and own policies", async () => {
    const { t, tenant, admin } = await setup();
    const direct = (
      await t.request("POST", "/0.1/policies", { token: admin, body: { name: `d${uniq()}`, acl: ["confd.direct"] } })
    ).json;
    const viaGroup = (
      await t.request("POST", "/0.1/policies", { token: admin, body: { name: `v${uniq()}`, acl: ["confd.group"] } })
    ).json;
    const name = `u${uniq()}`;
    const user = (await t.request("POST", "/0.1/users", { token: admin, body: { username: name, password: "pw" } }))
      .json;
    const g = (await t.request("POST", "/0.1/groups", { token: admin, body: { name: `grp${uniq()}` } })).json;
    expect((await t.request("PUT", `/0.1/groups/${g.uuid}/users/${user.uuid}`, { token: admin })).status).toBe(204);
    expect((await t.request("PUT", `/0.1/groups/${g.uuid}/policies/${viaGroup.slug}`, { token: admin })).status).toBe(
      204,
    );
    expect((await t.request("PUT", `/0.1/users/${user.uuid}/policies/${direct.uuid}`, { token: admin })).status).toBe(
      204,
    );
    expect(
      (await t.request("GET", `/0.1/users/${user.uuid}/policies`, { token: admin })).json.items.map(
        (p: { uuid: string }) => p.uuid,
      ),
    ).toEqual([direct.uuid]);
    expect(
      (await t.request("GET", `/0.1/groups/${g.uuid}/policies`, { token: admin })).json.items.map(
        (p: { uuid: string }) => p.uuid,
      ),
    ).toEqual([viaGroup.uuid]);
    expect(
      (await t.request("GET", `/0.1/users?has_policy_uuid=${viaGroup.uuid}`, { token: admin })).json.items.map(
        (u: { uuid: string }) => u.uuid,
      ),
    ).toEqual([user.uuid]);
    expect((await t.request("GET", `/0.1/users?policy_uuid=${viaGroup.uuid}`, { token: admin })).json.filtered).toBe(0);
    expect(
      (await t.request("GET", `/0.1/policies?user_uuid=${user.uuid}`, { token: admin })).json.items.map(
        (p: { uuid: string }) => p.uuid,
      ),
    ).toEqual([direct.uuid]);
    const login = await t.request("POST", "/0.1/token", {
      body: {},
      headers: { Authorization: `Basic ${btoa(`${name}:pw`)}` },
    });
    expect(login.json.data.acl).toEqual(["confd.group", "confd.direct", "auth.users.me.mfa.#"]); // + mfa.self_service
    expect(
      (await t.request("DELETE", `/0.1/groups/${g.uuid}/policies/${viaGroup.uuid}`, { token: admin })).status,
    ).toBe(204);
    expect(
      (await t.request("DELETE", `/0.1/users/${user.uuid}/policies/${direct.slug}`, { token: admin })).status,
    ).toBe(204);
    expect((await t.request("GET", `/0.1/users/${user.uuid}/policies`, { token: admin })).json.total).toBe(0);
    expect(tenant).toBeTruthy();
  });

  test("shared policies: visible read-only below, not above or beside; duplicates refused", async () => {
    const { t, tenant, child, admin, childAdmin, siblingAdmin } = await setup();
    const shared = (
      await t.request("POST", "/0.1/policies", {
        token: admin,
        body: { name: `s${uniq()}`, shared: true, acl: ["confd.users.read"] },
      })
    ).json;
    expect(shared.shared).toBe(true);
    const seen = await t.request("GET", `/0.1/policies/${shared.uuid}`, { token: childAdmin });
    expect(seen.json).toMatchObject({ tenant_uuid: child, read_only: true, shared: false });
    let r = await t.request("PUT", `/0.1/policies/${shared.uuid}`, { token: childAdmin, body: { name: "mine" } });
    expect([r.status, r.json.error_id]).toEqual([403, "forbidden-policy"]);
    r = await t.request("POST", "/0.1/policies", { token: childAdmin, body: { name: shared.name } });
    expect([r.status, r.json.error_id]).toEqual([409, "conflict"]);
    expect((await t.request("GET", `/0.1/policies/${shared.uuid}`, { token: siblingAdmin })).status).toBe(404);
    const ro = await t.request("GET", "/0.1/policies?read_only=true", { token: childAdmin });
    expect(ro.json.items.map((p: { uuid: string }) => p.uuid)).toContain(shared.uuid);
    const own = await t.request("GET", "/0.1/policies?read_only=false", { token: childAdmin });
    expect(own.json.items.map((p: { uuid: string }) => p.uuid)).not.toContain(shared.uuid);
    expect(tenant).toBeTruthy();
  });

  test("isolation: sibling and child admins neither read nor change; Wazo-Tenant reaches the child", async () => {
    const { t, child, admin, childAdmin, siblingAdmin } = await setup();
    const p = (await t.request("POST", "/0.1/policies", { token: admin, body: { name: `p${uniq()}` } })).json;
    for (const who of [siblingAdmin, childAdmin]) {
      expect((await t.request("GET", `/0.1/policies/${p.uuid}`, { token: who })).status).toBe(404);
      expect((await t.request("PUT", `/0.1/policies/${p.uuid}`, { token: who, body: { name: "x" } })).status).toBe(404);
      expect((await t.request("PUT", `/0.1/policies/${p.uuid}/acl/confd.x`, { token: who })).status).toBe(404);
      expect((await t.request("DELETE", `/0.1/policies/${p.uuid}`, { token: who })).status).toBe(204);
      expect(
        (await t.request("GET", "/0.1/policies?recurse=true", { token: who })).json.items.map(
          (x: { uuid: string }) => x.uuid,
        ),
      ).not.toContain(p.uuid);
    }
    expect((await t.request("GET", `/0.1/policies/${p.uuid}`, { token: admin })).status).toBe(200);
    const inChild = await t.request("POST", "/0.1/policies", {
      token: admin,
      tenant: child,
      body: { name: "kidpolicy" },
    });
    expect(inChild.json.tenant_uuid).toBe(child);
    expect((await t.request("GET", "/0.1/policies/kidpolicy", { token: admin })).status).toBe(404);
    expect((await t.request("GET", "/0.1/policies/kidpolicy", { token: admin, tenant: child })).status).toBe(200);
    const names = (await listRecordedEvents(t.app.db)).filter(
      (e) => e.routingKey === `auth.policies.${p.uuid}.created`,
    );
    expect(names.length).toBe(1);
  });
});

describeEachDb(
  "startup synchronisation of default policies and groups",
  (get) => {
    test("config-managed policies, all-users policies and default groups in every tenant", async () => {
      const t = get();
      const admin = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
      const tenant = (await t.request("POST", "/0.1/tenants", { token: admin, body: { name: "synced" } })).json;
      const tenantAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant.uuid })).token;
      const policies = (await t.request("GET", "/0.1/policies", { token: tenantAdmin })).json.items;
      const everyone = policies.find((p: { slug: string }) => p.slug === "everyone");
      expect(everyone).toMatchObject({
        tenant_uuid: tenant.uuid,
        read_only: true,
        acl: ["confd.users.me.read"],
        description: "Automatically created",
      });
      const groups = (await t.request("GET", "/0.1/groups", { token: tenantAdmin })).json.items;
      const allUsers = groups.find((g: { read_only: boolean }) => g.read_only);
      const defaultGroup = groups.find((g: { name: string }) => g.name === "admins");
      expect(defaultGroup).toMatchObject({ slug: "admins", read_only: false });
      const allUsersPolicies = (await t.request("GET", `/0.1/groups/${allUsers.uuid}/policies`, { token: tenantAdmin }))
        .json.items;
      expect(allUsersPolicies.map((p: { slug: string }) => p.slug)).toEqual(["everyone"]);
      const adminPolicies = (
        await t.request("GET", `/0.1/groups/${defaultGroup.uuid}/policies`, { token: tenantAdmin })
      ).json.items;
      expect(adminPolicies.map((p: { slug: string }) => p.slug)).toEqual(["admin_acl"]);
      const r = await t.request("DELETE", `/0.1/policies/${everyone.uuid}`, { token: admin });
      expect(r.status).toBe(403);
    });
  },
  {
    config: {
      default_policies: { everyone: { acl: ["confd.users.me.read"] }, admin_acl: { acl: ["confd.#"] } },
      all_users_policies: { everyone: true },
      tenant_default_groups: { admins: { policies: { admin_acl: true } } },
    },
  },
);

describeEachDb("user policies and groups: isolation", (get) => {
  test("other tenants' admins can neither list nor attach nor detach a user's policies", async () => {
    const t = get();
    const tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    const user = await createUserRow(t.app, { tenantUuid: tenant });
    const p = (await t.request("POST", "/0.1/policies", { token: admin, body: { name: `iso${uniq()}` } })).json;
    expect((await t.request("PUT", `/0.1/users/${user}/policies/${p.uuid}`, { token: admin })).status).toBe(204);
    for (const other of [await createTenantRow(t.app), await createTenantRow(t.app, { parentUuid: tenant })]) {
      const token = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: other })).token;
      const own = (await t.request("POST", "/0.1/policies", { token, body: { name: `own${uniq()}` } })).json;
      expect((await t.request("GET", `/0.1/users/${user}/policies`, { token })).status).toBe(404);
      expect((await t.request("GET", `/0.1/users/${user}/groups`, { token })).status).toBe(404);
      expect((await t.request("PUT", `/0.1/users/${user}/policies/${own.uuid}`, { token })).status).toBe(404);
      expect((await t.request("DELETE", `/0.1/users/${user}/policies/${p.uuid}`, { token })).status).toBe(204); // touches nothing (D4 of docs/wazo-auth-differences.md, D9): still attached below
    }
    const r = await t.request("GET", `/0.1/users/${user}/policies`, { token: admin });
    expect(r.json.items.map((x: { uuid: string }) => x.uuid)).toEqual([p.uuid]);
    // a policy of another tenant cannot be attached to this tenant's user either
    const foreign = (
      await t.request("POST", "/0.1/policies", {
        token: (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: await createTenantRow(t.app) })).token,
        body: { name: `f${uniq()}` },
      })
    ).json;
    expect((await t.request("PUT", `/0.1/users/${user}/policies/${foreign.uuid}`, { token: admin })).status).toBe(404);
  });
});
