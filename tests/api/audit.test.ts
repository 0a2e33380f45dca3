// The audit trail (issue 26, docs/audit.md): what is recorded and with which fields, in the
// transaction of the change (a rollback records nothing), never a secret; GET /0.1/audit's
// filters, errors and tenant isolation; the hash chain's verification (an edited or deleted row is
// named) and retention (verification still passes after it, from the anchor).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import { execRows, openDatabase } from "../../src/db/index.ts";
import { auditEntries, users } from "../../src/db/schema.ts";
import { listRecordedEvents } from "../../src/services/events.ts";
import { pgClusterAvailable, startPgCluster, type PgCluster } from "../helpers/pg-cluster.ts";
import { inTransaction } from "../../src/db/tx.ts";
import { applyRetention, verifyAudit } from "../../src/services/audit/chain.ts";
import { pageOrder } from "../../src/services/audit/query.ts";
import { recordAudit } from "../../src/services/audit/record.ts";
import { currentCode } from "../../src/services/auth/totp.ts";
import type { AuditItem as Item } from "../../src/services/audit/item.ts";
import { createTestApp, databaseKinds, describeEachDb, freshPostgres, type TestApp } from "../helpers/app.ts";
import { createUserRow, tenantFamily, tokenFor } from "../helpers/fixtures.ts";

const MFA_KEY = Buffer.alloc(32, 7).toString("base64");
const basic = (login: string, password: string) => ({
  Authorization: `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`,
});

const master = async (t: TestApp) => (await tokenFor(t.app, { acl: ["auth.#"] })).token;

async function entries(t: TestApp, query: string, token?: string): Promise<Item[]> {
  const r = await t.request("GET", `/0.1/audit?recurse=true&limit=1000&${query}`, {
    token: token ?? (await master(t)),
  });
  expect(r.status).toBe(200);
  return r.json.items;
}

const one = async (t: TestApp, query: string) => {
  const items = await entries(t, query);
  expect(items.length).toBe(1);
  return items[0]!;
};

/** Every row of the trail as text: what a secret must never be part of. */
const trailText = async (t: TestApp) =>
  (
    await execRows<{ t: string }>(
      t.app.db,
      sql`select coalesce(string_agg(a::text, ' '), '') as t from tessera.audit a`,
    )
  )[0]!.t +
  (
    await execRows<{ t: string }>(
      t.app.db,
      sql`select coalesce(string_agg(o::text, ' '), '') as t from tessera_event_outbox o where name = 'auth_audit_entry_recorded'`,
    )
  )[0]!.t;

const config = { mfa: { encryption_keys: [{ id: "k1", key: MFA_KEY }] }, login_throttling: { max_failures: 3 } };

describeEachDb(
  "audit trail: what is recorded",
  (get) => {
    test("logins: success, failure with its reason class, throttled, MFA required and failed, refresh-token use", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      const name = `au-${crypto.randomUUID().slice(0, 8)}`;
      const user = await createUserRow(t.app, {
        tenantUuid: fam.tenant,
        username: name,
        password: "Pw-login-secret-1",
      });
      const ok = await t.request("POST", "/0.1/token", {
        headers: { ...basic(name, "Pw-login-secret-1"), "User-Agent": "audit-test/1", "X-Forwarded-For": "10.9.9.9" },
        body: { access_type: "offline", client_id: "audit-cli" },
        remoteAddr: "192.0.2.7",
      });
      expect(ok.status).toBe(200);
      const success = await one(t, `action=login.success&target_uuid=${user}`);
      expect(success).toMatchObject({
        actor: {
          user_uuid: user,
          session_uuid: ok.json.data.session_uuid,
          tenant_uuid: fam.tenant,
          address: "192.0.2.7",
          user_agent: "audit-test/1",
        },
        target: { kind: "user", uuid: user, tenant_uuid: fam.tenant },
        outcome: "success",
        changes: [],
      });
      const refreshed = await t.request("POST", "/0.1/token", {
        body: { refresh_token: ok.json.data.refresh_token, client_id: "audit-cli" },
      });
      expect(refreshed.status).toBe(200);
      const use = await one(t, `action=refresh_token.use&target_uuid=${user}`);
      expect(use.changes).toEqual([{ field: "client_id", old: null, new: "audit-cli" }]);
      expect(use.actor.session_uuid).toBe(refreshed.json.data.session_uuid);

      for (let i = 0; i < 3; i++)
        expect(
          (
            await t.request("POST", "/0.1/token", {
              headers: basic(name, `Wrong-${i}-secret`),
              body: {},
              remoteAddr: "192.0.2.8",
            })
          ).status,
        ).toBe(401);
      expect(
        (
          await t.request("POST", "/0.1/token", {
            headers: basic(name, "Wrong-3-secret"),
            body: {},
            remoteAddr: "192.0.2.8",
          })
        ).status,
      ).toBe(429);
      const failures = (await entries(t, "action=login.failure")).filter((e) => e.actor.address === "192.0.2.8");
      expect(failures.length).toBe(3);
      expect(failures[0]).toMatchObject({
        outcome: "invalid_credentials",
        actor: { user_uuid: null, address: "192.0.2.8" },
        // The login name names a user: the entry is about them, in their tenant (audit-tenant-view.test.ts).
        target: { kind: "user", uuid: user, tenant_uuid: fam.tenant },
        changes: [{ field: "login", old: null, new: name }],
      });
      const throttled = (await entries(t, "action=login.throttled&outcome=throttled")).filter(
        (e) => e.actor.address === "192.0.2.8",
      );
      expect(throttled.length).toBe(1);

      // Second factor: required (no code), then a wrong code.
      const mfaName = `mf-${crypto.randomUUID().slice(0, 8)}`;
      const mfaUser = await createUserRow(t.app, {
        tenantUuid: fam.tenant,
        username: mfaName,
        password: "Pw-mfa-secret-1",
      });
      const self = (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: mfaUser, tenantUuid: fam.tenant }))
        .token;
      const started = await t.request("POST", "/0.1/users/me/mfa/totp", { token: self });
      const secret: string = started.json.secret;
      const confirmed = await t.request("POST", "/0.1/users/me/mfa/totp/confirm", {
        token: self,
        body: { code: currentCode(secret) },
      });
      expect(confirmed.status).toBe(200);
      const enrol = await one(t, `action=mfa.totp.enrol&target_uuid=${mfaUser}`);
      expect(enrol.changes.map((c) => c.field)).toEqual(["totp_secret", "recovery_codes"]);
      expect(enrol.changes.every((c) => c.old === null && c.new === null)).toBe(true);
      expect(
        (
          await t.request("POST", "/0.1/token", {
            headers: basic(mfaName, "Pw-mfa-secret-1"),
            body: {},
            remoteAddr: "192.0.2.9",
          })
        ).json.error_id,
      ).toBe("mfa-required");
      expect(
        (await entries(t, "action=login.mfa_required")).filter((e) => e.actor.address === "192.0.2.9")[0]?.outcome,
      ).toBe("mfa_required");
      const valid = new Set([-1, 0, 1].map((o) => currentCode(secret, Date.now() + o * 30_000)));
      const wrong = ["000000", "111111", "222222", "333333"].find((c) => !valid.has(c))!;
      expect(
        (
          await t.request("POST", "/0.1/token", {
            headers: basic(mfaName, "Pw-mfa-secret-1"),
            body: { mfa_code: wrong },
            remoteAddr: "192.0.2.9",
          })
        ).status,
      ).toBe(401);
      expect(
        (await entries(t, "action=login.mfa_failed")).filter((e) => e.actor.address === "192.0.2.9")[0]?.outcome,
      ).toBe("mfa_invalid");

      const text = await trailText(t);
      for (const s of [
        "Pw-login-secret-1",
        "Wrong-0-secret",
        "Pw-mfa-secret-1",
        ok.json.data.token,
        ok.json.data.refresh_token,
        refreshed.json.data.token,
        secret,
        wrong,
        ...confirmed.json.recovery_codes,
      ])
        expect(text).not.toContain(s);
    });

    test("administrative writes: actor, target and the changed fields, never a secret", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      const adm = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: fam.tenant });
      const req = (method: string, path: string, body?: unknown) =>
        t.request(method, path, {
          token: adm.token,
          body,
          headers: { "User-Agent": "console/2" },
          remoteAddr: "198.51.100.4",
        });
      const created = await req("POST", "/0.1/users", {
        username: `w-${crypto.randomUUID().slice(0, 6)}`,
        password: "Create-secret-9",
        firstname: "Ann",
      });
      expect(created.status).toBe(200);
      const u = created.json.uuid as string;
      const create = await one(t, `action=user.create&target_uuid=${u}`);
      expect(create).toMatchObject({
        actor: {
          user_uuid: adm.userUuid,
          session_uuid: adm.sessionUuid,
          tenant_uuid: fam.tenant,
          address: "198.51.100.4",
          user_agent: "console/2",
        },
        target: { kind: "user", uuid: u, tenant_uuid: fam.tenant },
        outcome: "success",
      });
      expect(create.changes).toContainEqual({ field: "firstname", old: null, new: "Ann" });
      expect(
        (await req("PUT", `/0.1/users/${u}`, { username: created.json.username, firstname: "Bea", enabled: false }))
          .status,
      ).toBe(204);
      const update = await one(t, `action=user.update&target_uuid=${u}`);
      expect(update.changes).toEqual([
        { field: "firstname", old: "Ann", new: "Bea" },
        { field: "enabled", old: true, new: false },
      ]);
      expect(
        (
          await req("PUT", `/0.1/users/${u}/password`, {
            old_password: "Create-secret-9",
            new_password: "Changed-secret-9",
          })
        ).status,
      ).toBe(204);
      expect((await one(t, `action=user.password.change&target_uuid=${u}`)).changes).toEqual([
        { field: "password", old: null, new: null },
      ]);
      const g = (await req("POST", "/0.1/groups", { name: "audited" })).json.uuid as string;
      expect((await req("PUT", `/0.1/groups/${g}/users/${u}`)).status).toBe(204);
      expect((await one(t, `action=group.user.add&target_uuid=${g}`)).changes).toEqual([
        { field: "user_uuid", old: null, new: u },
      ]);
      const p = (await req("POST", "/0.1/policies", { name: "audited", acl: ["auth.users.read"] })).json.uuid as string;
      expect(
        (await req("PUT", `/0.1/policies/${p}`, { name: "audited", acl: ["auth.users.read", "auth.groups.read"] }))
          .status,
      ).toBe(204);
      expect((await one(t, `action=policy.update&target_uuid=${p}`)).changes).toEqual([
        { field: "acl", old: ["auth.users.read"], new: ["auth.users.read", "auth.groups.read"] },
      ]);
      expect((await req("PUT", `/0.1/users/${u}/policies/${p}`)).status).toBe(204);
      expect((await one(t, `action=user.policy.attach&target_uuid=${u}`)).changes).toEqual([
        { field: "policy_uuid", old: null, new: p },
      ]);
      const ldap = await req("PUT", "/0.1/backends/ldap", {
        host: "ldap.example.com",
        port: 389,
        user_base_dn: "ou=people,dc=example,dc=com",
        user_login_attribute: "uid",
        user_email_attribute: "mail",
        bind_dn: "cn=reader",
        bind_password: "Bind-secret-9",
      });
      expect(ldap.status).toBeLessThan(300);
      const ldapEntry = await one(t, `action=ldap_config.*&target_uuid=${fam.tenant}`);
      expect(ldapEntry.changes).toContainEqual({ field: "host", old: null, new: "ldap.example.com" });
      expect(ldapEntry.changes).toContainEqual({ field: "bind_password", old: null, new: null });
      const client = await req("POST", "/0.1/oidc/clients", {
        name: "rp",
        client_type: "confidential",
        redirect_uris: ["https://rp.example.com/cb"],
      });
      expect(client.status).toBe(201);
      expect((await one(t, `action=oidc_client.create&target_uuid=${client.json.client_id}`)).target).toEqual({
        kind: "oidc_client",
        uuid: client.json.client_id,
        tenant_uuid: fam.tenant,
      });
      const sub = (await req("POST", "/0.1/tenants", { name: "audited-sub" })).json.uuid as string;
      expect((await one(t, `action=tenant.create&target_uuid=${sub}`)).changes).toContainEqual({
        field: "name",
        old: null,
        new: "audited-sub",
      });
      const other = (await req("POST", "/0.1/tenants", { name: "other-sub" })).json.uuid as string;
      expect((await req("PUT", `/0.1/tenants/${sub}/parent/${other}`)).status).toBeLessThan(300);
      expect((await one(t, `action=tenant.move&target_uuid=${sub}`)).changes).toEqual([
        { field: "parent_uuid", old: fam.tenant, new: other },
      ]);
      const victim = await tokenFor(t.app, { acl: [], tenantUuid: fam.tenant });
      expect((await req("DELETE", `/0.1/sessions/${victim.sessionUuid}`)).status).toBe(204);
      expect((await one(t, `action=session.delete&target_uuid=${victim.sessionUuid}`)).actor.user_uuid).toBe(
        adm.userUuid,
      );
      const own = await tokenFor(t.app, { acl: [], tenantUuid: fam.tenant });
      expect((await t.request("DELETE", `/0.1/token/${own.token}`, { remoteAddr: "198.51.100.5" })).status).toBe(200);
      expect((await one(t, `action=token.revoke&target_uuid=${own.sessionUuid}`)).actor).toMatchObject({
        user_uuid: own.userUuid,
        address: "198.51.100.5",
      });
      expect((await req("DELETE", `/0.1/users/${u}`)).status).toBe(204);
      expect((await one(t, `action=user.delete&target_uuid=${u}`)).changes).toContainEqual({
        field: "firstname",
        old: "Bea",
        new: null,
      });

      const text = await trailText(t);
      for (const s of [
        "Create-secret-9",
        "Changed-secret-9",
        "Bind-secret-9",
        client.json.client_secret,
        own.token,
        victim.token,
        adm.token,
      ])
        expect(text).not.toContain(s);
    });

    test("tenant MFA policy, identity provider of a user, run-time configuration", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      expect(
        (await t.request("PUT", `/0.1/tenants/${fam.child}/mfa`, { token: fam.admin, body: { mfa: "required" } }))
          .status,
      ).toBe(204);
      expect((await one(t, `action=tenant.mfa_policy.update&target_uuid=${fam.child}`)).changes).toEqual([
        { field: "mfa", old: null, new: "required" },
      ]);
      const u = await createUserRow(t.app, { tenantUuid: fam.tenant });
      expect((await t.request("PUT", `/0.1/idp/ldap/users/${u}`, { token: fam.admin })).status).toBeLessThan(300);
      expect((await one(t, `action=user.idp.update&target_uuid=${u}`)).changes).toEqual([
        { field: "authentication_method", old: "default", new: "ldap" },
      ]);
      // Clearing a user's failed-login counters is an administrator's act on the user.
      expect((await t.request("DELETE", `/0.1/users/${u}/login-failures`, { token: fam.admin })).status).toBe(204);
      const unlocked = await one(t, `action=user.login_failures.delete&target_uuid=${u}`);
      expect(unlocked.actor.tenant_uuid).toBe(fam.tenant);
      expect(unlocked.changes).toEqual([{ field: "counters_cleared", old: null, new: 0 }]);
      const top = (await tokenFor(t.app, { acl: ["auth.config.update"] })).token;
      const patched = await t.request("PATCH", "/0.1/config", {
        token: top,
        body: [{ op: "replace", path: "/debug", value: true }],
      });
      expect(patched.status).toBe(200);
      expect((await entries(t, "action=config.update")).at(-1)?.changes).toEqual([
        { field: "debug", old: false, new: true },
      ]);
      await t.request("PATCH", "/0.1/config", { token: top, body: [{ op: "replace", path: "/debug", value: false }] });
    });

    test("a rolled-back change records nothing, and its chain does not advance", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      const head = async () =>
        (
          await execRows<{ seq: string }>(
            t.app.db,
            sql`select coalesce(sum(seq), 0)::text as seq from tessera.audit_chain where tenant_uuid = ${fam.tenant}`,
          )
        )[0]?.seq ?? "0";
      const before = await head();
      // (`expect(promise).rejects` never settles here under Bun 1.4.5: the rejection is caught by hand.)
      const failed = await inTransaction(t.app, async (tx) => {
        await recordAudit(t.app, tx, null, {
          action: "test.rollback",
          target: { kind: "tenant", uuid: fam.tenant, tenantUuid: fam.tenant },
        });
        throw new Error("rolled back");
      }).then(
        () => null,
        (e: Error) => e.message,
      );
      expect(failed).toBe("rolled back");
      expect(await entries(t, "action=test.rollback")).toEqual([]);
      expect(await head()).toBe(before);
      // A refused write (409: the login is taken) records nothing either.
      const name = `dup-${crypto.randomUUID().slice(0, 6)}`;
      await createUserRow(t.app, { tenantUuid: fam.tenant, username: name });
      const r = await t.request("POST", "/0.1/users", { token: fam.admin, body: { username: name } });
      expect(r.status).toBe(409);
      expect((await entries(t, "action=user.create")).filter((e) => e.target.tenant_uuid === fam.tenant)).toEqual([]);
    });
  },
  { config },
);

describeEachDb("GET /0.1/audit: scope, filters, errors", (get) => {
  async function world() {
    const t = get();
    const fam = await tenantFamily(t.app);
    const adm = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: fam.tenant });
    const mk = async (tenant: string, name: string) =>
      (await t.request("POST", "/0.1/groups", { token: adm.token, tenant, body: { name } })).json.uuid as string;
    const inTenant = await mk(fam.tenant, "g-tenant");
    const inChild = await mk(fam.child, "g-child");
    return { t, fam, adm, inTenant, inChild };
  }

  test("an administrator sees their subtree only; Wazo-Tenant outside it is refused", async () => {
    const { t, fam, inTenant, inChild } = await world();
    const ids = (r: { json: { items: Item[] } }) => r.json.items.map((i) => i.target.uuid);
    let r = await t.request("GET", "/0.1/audit", { token: fam.admin });
    expect(r.status).toBe(200);
    expect(ids(r)).toContain(inTenant);
    expect(ids(r)).not.toContain(inChild);
    expect(r.json.total).toBeGreaterThanOrEqual(1);
    r = await t.request("GET", "/0.1/audit?recurse=true", { token: fam.admin });
    expect(ids(r)).toEqual(expect.arrayContaining([inTenant, inChild]));
    r = await t.request("GET", "/0.1/audit?recurse=true", { token: fam.siblingAdmin });
    expect(r.status).toBe(200);
    expect(
      r.json.items.filter((i: Item) => i.target.tenant_uuid === fam.tenant || i.target.tenant_uuid === fam.child),
    ).toEqual([]);
    r = await t.request("GET", "/0.1/audit", { token: fam.siblingAdmin, tenant: fam.tenant });
    expect([r.status, r.json.error_id]).toEqual([401, "unauthorized-tenant"]);
    r = await t.request("GET", "/0.1/audit", { token: fam.childAdmin, tenant: fam.tenant });
    expect(r.status).toBe(401);
    r = await t.request("GET", "/0.1/audit", { token: fam.admin, tenant: fam.child });
    expect(ids(r)).toEqual([inChild]);
    const noAcl = (await tokenFor(t.app, { acl: ["auth.users.read"], tenantUuid: fam.tenant })).token;
    expect((await t.request("GET", "/0.1/audit", { token: noAcl })).status).toBe(403);
  });

  test("filters: actor, target, kind, action prefix, outcome, time range, keyset paging", async () => {
    const { t, fam, adm, inTenant, inChild } = await world();
    const q = async (query: string) =>
      (await t.request("GET", `/0.1/audit?recurse=true&${query}`, { token: fam.admin })).json;
    expect((await q(`actor_uuid=${adm.userUuid}`)).items.map((i: Item) => i.target.uuid).sort()).toEqual(
      [inTenant, inChild].sort(),
    );
    expect((await q(`target_uuid=${inChild}`)).items.length).toBe(1);
    expect((await q(`target_uuid=${inChild}`)).filtered).toBe(1);
    expect((await q("target_kind=group&action=group.*")).items.length).toBe(2);
    expect((await q("action=group.create&outcome=failure")).items).toEqual([]);
    expect((await q("action=group.cre*")).items.length).toBe(2);
    expect((await q("action=group.cre")).items).toEqual([]);
    const all = (await q("action=group.create")).items as Item[];
    expect(all[0]!.time >= all[1]!.time).toBe(true); // newest first
    const asc = (await q("action=group.create&direction=asc")).items as Item[];
    expect(asc.map((i) => i.uuid)).toEqual(all.map((i) => i.uuid).reverse());
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await q(`since=${future}`)).items).toEqual([]);
    expect((await q(`until=${encodeURIComponent(all[1]!.time)}&action=group.create`)).items).toEqual([]);
    expect((await q(`since=${encodeURIComponent(all[1]!.time)}&action=group.create`)).items.length).toBe(2);
    const first = (await q("action=group.create&limit=1")).items as Item[];
    expect(first.map((i) => i.uuid)).toEqual([all[0]!.uuid]);
    expect((await q(`action=group.create&limit=1&after=${all[0]!.uuid}`)).items.map((i: Item) => i.uuid)).toEqual([
      all[1]!.uuid,
    ]);
    expect((await q("action=group.create&offset=1")).items.map((i: Item) => i.uuid)).toEqual([all[1]!.uuid]);
    expect((await q("search=group.cre")).items.length).toBeGreaterThanOrEqual(2);
  });

  test("a page is read from an index in its order, never sorted, whatever the filter and direction", async () => {
    const t = get();
    const e = auditEntries;
    const tenant = t.app.topTenantUuid;
    const filters = [
      sql`${e.tenantUuid} = ${tenant}`,
      sql`${e.actorUserUuid} = ${tenant}`,
      sql`${e.targetUuid} = ${tenant}`,
      sql`(${e.action} collate "C") like 'user.%'`,
      sql`${e.outcome} = 'throttled'`,
      sql`${e.time} >= now() - interval '1 day'`,
    ];
    for (const ascending of [false, true])
      for (const where of filters) {
        const query = t.app.db
          .select({ id: e.id })
          .from(e)
          .where(where)
          .orderBy(...pageOrder(ascending))
          .limit(50);
        const { sql: text, params } = query.toSQL();
        // With sorting priced out, a plan still sorts only when no index gives the order.
        const plan = await inTransaction(t.app, async (tx) => {
          await tx.execute(sql`set local enable_sort = off`);
          const rows = await execRows<Record<string, string>>(
            tx,
            sql.raw(`explain ${text.replace(/\$(\d+)/g, (_, n) => `'${String(params[Number(n) - 1])}'`)}`),
          );
          return rows.map((r) => Object.values(r)[0]).join("\n");
        });
        expect(plan).not.toContain("Sort");
      }
  });

  test("bad input: 400 with the parameter named, never a 500", async () => {
    const { t, fam } = await world();
    const bad = async (query: string, field: string) => {
      const r = await t.request("GET", `/0.1/audit?${query}`, { token: fam.admin });
      expect([r.status, r.json.error_id, Object.keys(r.json.details)]).toEqual([400, "invalid-data", [field]]);
    };
    await bad("actor_uuid=nobody", "actor_uuid");
    await bad("after=12", "after");
    await bad("since=yesterday", "since");
    await bad("until=2026-13-45T99:00:00Z", "until");
    await bad("action=us*er*", "action");
    await bad("order=actor", "order");
    await bad("limit=-1", "limit");
    await bad("direction=up", "direction");
    const r = await t.request("GET", `/0.1/audit?target_uuid=${"x".repeat(300)}&action=%00`, { token: fam.admin });
    expect(r.status).toBe(400);
  });
});

describeEachDb("audit chain: verify and retention", (get) => {
  async function someEntries(t: TestApp) {
    const fam = await tenantFamily(t.app);
    for (const name of ["a", "b", "c", "d"])
      await t.request("POST", "/0.1/groups", { token: fam.admin, body: { name } });
    return fam;
  }
  const rows = (t: TestApp, tenant: string) =>
    execRows<{ uuid: string; chain_seq: string }>(
      t.app.db,
      sql`select uuid, chain_seq from tessera.audit where tenant_uuid = ${tenant} order by chain_seq`,
    );

  test("an edited row is named; so is a deleted one; retention keeps the chain verifiable", async () => {
    const t = get();
    const fam = await someEntries(t);
    expect(await verifyAudit(t.app)).toMatchObject({ ok: true, broken: null });
    const [, second, third] = await rows(t, fam.tenant);
    // The trail refuses updates; an attacker with DDL rights lifts that first.
    const refused = await t.app.db
      .execute(sql`update tessera.audit set outcome = 'failure' where uuid = ${second!.uuid}`)
      .then(
        () => null,
        (e: Error) => e,
      );
    expect(refused).toBeInstanceOf(Error);
    await t.app.db.execute(sql`alter table tessera.audit disable trigger audit_immutable`);
    await t.app.db.execute(sql`update tessera.audit set outcome = 'failure' where uuid = ${second!.uuid}`);
    let report = await verifyAudit(t.app);
    expect(report.broken).toMatchObject({
      tenant_uuid: fam.tenant,
      uuid: second!.uuid,
      seq: Number(second!.chain_seq),
      reason: "hash_mismatch",
    });
    await t.app.db.execute(sql`update tessera.audit set outcome = 'success' where uuid = ${second!.uuid}`);
    await t.app.db.execute(sql`alter table tessera.audit enable trigger audit_immutable`);
    expect((await verifyAudit(t.app)).ok).toBe(true);

    await t.app.db.execute(sql`delete from tessera.audit where uuid = ${third!.uuid}`);
    report = await verifyAudit(t.app);
    expect(report.broken).toMatchObject({
      tenant_uuid: fam.tenant,
      seq: Number(third!.chain_seq),
      reason: "missing_entry",
    });
    expect(report.ok).toBe(false);
  });

  test("the last entry deleted shows against the chain's head", async () => {
    const t = get();
    const fam = await someEntries(t);
    const all = await rows(t, fam.tenant);
    await t.app.db.execute(sql`delete from tessera.audit where uuid = ${all[all.length - 1]!.uuid}`);
    const report = await verifyAudit(t.app, fam.tenant);
    expect(report.broken).toMatchObject({ tenant_uuid: fam.tenant, reason: "missing_entry", seq: all.length });
  });

  test("retention deletes old entries in batches and moves the anchor: verify passes, new entries chain on", async () => {
    const t = get();
    const fam = await someEntries(t);
    const before = (await rows(t, fam.tenant)).length;
    expect(before).toBe(4);
    expect(await applyRetention(t.app, 1, 1, Date.now() - 86_400_000)).toBe(0); // nothing is a day old
    const gone = await applyRetention(t.app, 1, 3, Date.now() + 2 * 86_400_000); // two days on: all of it
    expect(gone).toBeGreaterThanOrEqual(4);
    expect(await rows(t, fam.tenant)).toEqual([]);
    const [chain] = await execRows<{ anchor_seq: string; seq: string }>(
      t.app.db,
      sql`select anchor_seq, seq from tessera.audit_chain where tenant_uuid = ${fam.tenant}`,
    );
    expect([Number(chain!.anchor_seq), Number(chain!.seq)]).toEqual([4, 4]);
    await t.request("POST", "/0.1/groups", { token: fam.admin, body: { name: "after-retention" } });
    expect(await verifyAudit(t.app, fam.tenant)).toMatchObject({ ok: true, entries: 1 });
    const r = await t.request("GET", "/0.1/audit", { token: fam.admin });
    expect([r.json.total, r.json.items.length]).toEqual([1, 1]);
  });
});

describe.skipIf(!databaseKinds().includes("postgres"))("audit under concurrent writers [postgres]", () => {
  let t: TestApp | undefined;
  beforeAll(async () => {
    // Nine transactions open at once, and the queries beside them.
    t = await createTestApp("postgres", { database: () => freshPostgres(12) });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  }, 30_000);

  test("a tenant's concurrent writers take separate chains (up to eight) instead of waiting; every chain verifies", async () => {
    const app = t!.app;
    const fam = await tenantFamily(app);
    const entry = (n: number) => ({
      action: "test.lane",
      target: { kind: "tenant", uuid: fam.tenant, tenantUuid: fam.tenant },
      changes: [{ field: "n", old: null, new: n }],
    });
    // Transactions that record an entry, then stay open (holding their chain) until released.
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const holding = async (n: number) => {
      let recorded!: () => void;
      const isRecorded = new Promise<void>((r) => {
        recorded = r;
      });
      const done = inTransaction(app, async (tx) => {
        await recordAudit(app, tx, null, entry(n));
        recorded();
        await released;
      });
      return { isRecorded, done };
    };
    // Eight writers of a tenant with no entry yet, all at once: each records its entry while the
    // others hold theirs (none waits for another's commit), each opening a lane of its own.
    const open = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map(holding));
    await Promise.all(open.map((o) => o.isRecorded));
    // A ninth finds every lane held: it waits for one.
    let ninthDone = false;
    const ninth = inTransaction(app, (tx) => recordAudit(app, tx, null, entry(9))).then(() => {
      ninthDone = true;
    });
    await Bun.sleep(300);
    expect(ninthDone).toBe(false);
    release();
    await Promise.all([...open.map((o) => o.done), ninth]);
    const lanes = await execRows<{ lane: number; n: string }>(
      app.db,
      sql`select chain_lane as lane, count(*)::int as n from tessera.audit
          where tenant_uuid = ${fam.tenant} and action = 'test.lane' group by chain_lane order by chain_lane`,
    );
    expect(lanes.map((l) => Number(l.lane))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(lanes.reduce((a, l) => a + Number(l.n), 0)).toBe(9);
    const report = await verifyAudit(app, fam.tenant);
    expect(report).toMatchObject({ ok: true, chains: 8, broken: null });
    // One writer at a time takes the first lane again (a quiet tenant keeps to one chain).
    await inTransaction(app, (tx) => recordAudit(app, tx, null, entry(10)));
    const [last] = await execRows<{ lane: number }>(
      app.db,
      sql`select chain_lane as lane from tessera.audit where tenant_uuid = ${fam.tenant} order by id desc limit 1`,
    );
    expect(Number(last!.lane)).toBe(0);
    // An edit in a lane other than the first is named with its lane.
    const [victim] = await execRows<{ uuid: string; chain_seq: string }>(
      app.db,
      sql`select uuid, chain_seq from tessera.audit where tenant_uuid = ${fam.tenant} and chain_lane = 5`,
    );
    await app.db.execute(sql`alter table tessera.audit disable trigger audit_immutable`);
    try {
      await app.db.execute(sql`update tessera.audit set outcome = 'failure' where uuid = ${victim!.uuid}`);
      expect((await verifyAudit(app, fam.tenant)).broken).toMatchObject({
        lane: 5,
        uuid: victim!.uuid,
        seq: Number(victim!.chain_seq),
        reason: "hash_mismatch",
      });
    } finally {
      await app.db.execute(sql`update tessera.audit set outcome = 'success' where uuid = ${victim!.uuid}`);
      await app.db.execute(sql`alter table tessera.audit enable trigger audit_immutable`);
    }
  });

  test("an update's entry shows the values it replaced, even when another writer changed the user meanwhile", async () => {
    const app = t!.app;
    const username = `race-${crypto.randomUUID().slice(0, 8)}`;
    const u = await createUserRow(app, { username });
    await app.db.update(users).set({ firstname: "Ann" }).where(eq(users.uuid, u));
    // Another writer holds the user's row (changed, not committed yet) while the PUT arrives.
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    let held!: () => void;
    const isHeld = new Promise<void>((r) => {
      held = r;
    });
    const other = inTransaction(app, async (tx) => {
      await tx.update(users).set({ firstname: "Bob" }).where(eq(users.uuid, u));
      held();
      await released;
    });
    await isHeld;
    const put = t!.request("PUT", `/0.1/users/${u}`, {
      token: await master(t!),
      body: { username, firstname: "Cid" },
    });
    await Bun.sleep(300); // the PUT reaches the row and waits for it
    release();
    await other;
    expect((await put).status).toBe(204);
    const update = await one(t!, `action=user.update&target_uuid=${u}`);
    // Read without a lock, the PUT saw "Ann" before waiting, and recorded Ann → Cid.
    expect(update.changes).toContainEqual({ field: "firstname", old: "Bob", new: "Cid" });
  });
});

describeEachDb(
  "audit trail on the bus (a broker configured)",
  (get) => {
    test("each entry is also an outbox event of the same transaction, without secrets", async () => {
      const t = get();
      const fam = await tenantFamily(t.app);
      const r = await t.request("POST", "/0.1/users", {
        token: fam.admin,
        body: { username: "bus-audited", password: "Bus-secret-9" },
      });
      expect(r.status).toBe(200);
      const events = (await listRecordedEvents(t.app.db)).filter(
        (e) =>
          e.name === "auth_audit_entry_recorded" && (e.payload.data.target as { uuid: string }).uuid === r.json.uuid,
      );
      expect(events.length).toBe(1);
      expect(events[0]!.routingKey).toBe("auth.audit.user__DOT__create");
      expect(events[0]!.payload.data).toMatchObject({
        action: "user.create",
        outcome: "success",
        target: { kind: "user", tenant_uuid: fam.tenant },
      });
      expect(JSON.stringify(events[0]!.payload)).not.toContain("Bus-secret-9");
    });
  },
  // The publisher is not started (services: false): the outbox rows stay observable.
  { config: { amqp: { uri: "amqp://guest:guest@127.0.0.1:1/" } }, services: false },
);

describe.skipIf(!pgClusterAvailable)("GET /0.1/audit during a database outage", () => {
  let cluster: PgCluster;
  let t: TestApp;
  beforeAll(async () => {
    cluster = await startPgCluster();
    t = await createTestApp("postgres", {
      database: () => openDatabase({ url: cluster.url, poolSize: 4, timeoutSeconds: 1 }),
      config: { db_timeout: 1 },
    });
  }, 120_000);
  afterAll(async () => {
    await t?.close().catch(() => {});
    await cluster?.destroy();
  }, 60_000);

  test("a JSON 503, never a 500", async () => {
    const fam = await tenantFamily(t.app);
    expect((await t.request("GET", "/0.1/audit", { token: fam.admin })).status).toBe(200); // the token is now cached
    await cluster.stop();
    const r = await t.request("GET", "/0.1/audit?action=user.*", { token: fam.admin });
    expect([r.status, r.json.error_id]).toEqual([503, "service-unavailable"]);
    await cluster.start();
  }, 60_000);
});
