// Issue 12, point 2: a database that wazo-auth wrote keeps working under Tessera — adopted in place
// on PostgreSQL, and imported into the embedded PGlite database. Same logins (wazo-auth's password
// hashes), same refresh token, same ACL and metadata as wazo-auth gave, same data through the API.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { openDatabase } from "../../src/db/index.ts";
import { users } from "../../src/db/schema.ts";
import { importDatabase } from "../../src/db/transfer.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import {
  dataset,
  FIXTURE_ADMIN,
  FIXTURE_XIVO_UUID,
  fixtureServerMissing,
  loadWazoFixture,
  type FixtureDatabase,
} from "../helpers/wazo-fixture.ts";

const basic = (login: string, password: string) => `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`;
const sorted = (a: string[]) => [...a].sort();

/** wazo-auth's ACL of a user of purpose `user`, plus the one entry of `mfa.self_service` (on by default): D16 of docs/wazo-auth-differences.md. */
const withSelfService = (acl: readonly string[]) => [...acl, "auth.users.me.mfa.#"];
const skip = fixtureServerMissing();

interface Variant {
  name: string;
  open(fixture: FixtureDatabase): Promise<{ app: TestApp; cleanup(): Promise<void> }>;
}

// wazo-auth's PBKDF2 (250,000 iterations) takes seconds on a loaded 2-core machine: a request deadline
// (db_timeout) of 5 s would answer those logins 503. The deadline itself is tested in tests/ops/outage.test.ts.
const SLOW_HASH_DEADLINE = 60;

const variants: Variant[] = [
  {
    name: "PostgreSQL, adopted in place",
    async open(fixture) {
      const app = await createTestApp("postgres", {
        config: { uuid: FIXTURE_XIVO_UUID, db_timeout: SLOW_HASH_DEADLINE },
        database: () => openDatabase({ url: fixture.url, poolSize: 5 }),
      });
      return { app, cleanup: async () => {} };
    },
  },
  {
    name: "PGlite, imported",
    async open(fixture) {
      const dir = mkdtempSync(join(tmpdir(), "tessera-import-"));
      await importDatabase({ from: fixture.url, toDataDir: dir });
      const app = await createTestApp("pglite", {
        config: { uuid: FIXTURE_XIVO_UUID, db_timeout: SLOW_HASH_DEADLINE },
        database: () => openDatabase({ dataDir: dir }),
      });
      return { app, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
];

for (const variant of variants) {
  (skip ? describe.skip : describe)(`a wazo-auth database [${variant.name}]`, () => {
    let fixture: FixtureDatabase;
    let t: TestApp;
    let cleanup: () => Promise<void>;
    let admin: string;
    /** What wazo-auth put in its tokens' metadata, per user (from the fixture's auth_token). */
    const wazoMetadata = new Map<string, Record<string, unknown>>();

    beforeAll(async () => {
      fixture = await loadWazoFixture();
      for (const row of await fixture.sql<
        { auth_id: string; metadata: string }[]
      >`select auth_id, metadata from auth_token where metadata like '{"uuid"%'`) {
        wazoMetadata.set(row.auth_id, JSON.parse(row.metadata));
      }
      ({ app: t, cleanup } = await variant.open(fixture));
      const r = await login(FIXTURE_ADMIN.username, FIXTURE_ADMIN.password);
      expect(r.status).toBe(200);
      admin = r.json.data.token;
    }, 120_000);
    afterAll(async () => {
      await t?.close();
      await cleanup?.();
      await fixture?.drop();
    }, 30_000);

    const login = (username: string, password: string, body: unknown = {}) =>
      t.request("POST", "/0.1/token", { body, headers: { Authorization: basic(username, password) } });

    test("every user logs in with the password wazo-auth hashed (then rehashed to argon2id); no password, no login", async () => {
      const hashes = async () => new Map((await t.app.db.select().from(users)).map((u) => [u.uuid, u.passwordHash]));
      const before = await hashes();
      for (const user of Object.values(dataset.users))
        if (user.password) expect(before.get(user.uuid)).toMatch(/^[0-9a-f]{128}$/);
      for (const [name, user] of Object.entries(dataset.users)) {
        const r = await login(`fx${name}`, user.password ?? "anything");
        expect({ name, status: r.status }).toEqual({ name, status: user.password ? 200 : 401 });
        if (user.password) expect((await login(`fx${name}`, `${user.password}x`)).status).toBe(401);
      }
      expect((await login("alice@fx.example.com", dataset.users.alice.password)).status).toBe(200); // confirmed email
      const after = await hashes();
      for (const user of Object.values(dataset.users))
        if (user.password) expect(after.get(user.uuid)).toMatch(/^\$argon2id\$/);
      for (const [name, user] of Object.entries(dataset.users)) {
        if (user.password)
          expect({ name, status: (await login(`fx${name}`, user.password)).status }).toEqual({ name, status: 200 });
      }
    });

    test("the same login gets the ACL and metadata wazo-auth gave", async () => {
      for (const [name, acl] of [
        ["alice", dataset.alice_acl],
        ["bob", dataset.bob_acl],
      ] as const) {
        const user = dataset.users[name];
        const r = await login(`fx${name}`, user.password!);
        expect(sorted(r.json.data.acl)).toEqual(sorted(withSelfService(acl)));
        expect(r.json.data.metadata).toEqual(wazoMetadata.get(user.uuid)!);
        expect(r.json.data.xivo_uuid).toBe(FIXTURE_XIVO_UUID);
      }
      const r = await login(FIXTURE_ADMIN.username, FIXTURE_ADMIN.password);
      expect(r.json.data.acl).toEqual(["#"]);
      expect(r.json.data.metadata).toEqual(wazoMetadata.get(FIXTURE_ADMIN.uuid)!);
    });

    test("wazo-auth's refresh token keeps working with its client id, and only with it", async () => {
      const r = await t.request("POST", "/0.1/token", {
        body: { refresh_token: dataset.alice_refresh_token, client_id: "fx-app" },
      });
      expect(r.status).toBe(200);
      expect(r.json.data.auth_id).toBe(dataset.users.alice.uuid);
      expect(sorted(r.json.data.acl)).toEqual(sorted(withSelfService(dataset.alice_acl)));
      expect(r.json.data.metadata).toEqual(wazoMetadata.get(dataset.users.alice.uuid)!);
      const other = await t.request("POST", "/0.1/token", {
        body: { refresh_token: dataset.alice_refresh_token, client_id: "other-app" },
      });
      expect(other.status).toBe(401);
      const listed = await t.request("GET", `/0.1/users/${dataset.users.alice.uuid}/tokens`, { token: admin });
      expect(listed.json.items.map((i: { client_id: string }) => i.client_id)).toEqual(["fx-app"]);
    });

    test("an access token wazo-auth issued is checked as wazo-auth would", async () => {
      const [row] = await fixture.sql<
        { expire_t: number }[]
      >`select expire_t from auth_token where uuid = ${dataset.bob_token}`;
      const valid = row!.expire_t > Date.now() / 1000;
      const r = await t.request("HEAD", `/0.1/token/${dataset.bob_token}?scope=dird.me.read`);
      expect(r.status).toBe(valid ? 204 : 404);
    });

    test("tenants: tree, slugs, domains and address are served unchanged", async () => {
      for (const record of Object.values(dataset.tenant_records)) {
        const r = await t.request("GET", `/0.1/tenants/${record.uuid}`, { token: admin });
        expect(r.status).toBe(200);
        const { uuid, parent_uuid, name, slug, phone, contact, default_authentication_method, domain_names, address } =
          r.json;
        expect({
          uuid,
          parent_uuid,
          name,
          slug,
          phone,
          contact,
          default_authentication_method,
          domain_names,
          address,
        }).toEqual(record);
      }
      const sales = await t.request("GET", "/0.1/tenants", { token: admin, tenant: dataset.tenants.acme });
      expect(sorted(sales.json.items.map((i: { uuid: string }) => i.uuid))).toEqual(
        sorted([dataset.tenants.acme, dataset.tenants.sales]),
      );
    });

    test("users, emails, groups and policies are served unchanged", async () => {
      const alice = await t.request("GET", `/0.1/users/${dataset.users.alice.uuid}`, { token: admin });
      expect(alice.json).toMatchObject({
        uuid: dataset.users.alice.uuid,
        username: "fxalice",
        firstname: "Alice",
        lastname: "Test",
        purpose: "user",
        enabled: true,
        tenant_uuid: dataset.tenants.acme,
      });
      expect(alice.json.emails).toEqual([
        { uuid: "bb1f89e1-057e-4573-926f-0b5617250fa6", address: "alice@fx.example.com", confirmed: true, main: true },
      ]);
      const group = await t.request("GET", `/0.1/groups/${dataset.groups.ops}`, { token: admin });
      expect(group.json).toMatchObject({
        uuid: dataset.groups.ops,
        name: "fx-ops",
        slug: "fx-ops",
        tenant_uuid: dataset.tenants.acme,
        read_only: false,
      });
      const members = await t.request("GET", `/0.1/groups/${dataset.groups.ops}/users`, { token: admin });
      expect(members.json.items.map((u: { uuid: string }) => u.uuid)).toEqual([dataset.users.alice.uuid]);
      const gp = await t.request("GET", `/0.1/groups/${dataset.groups.ops}/policies`, { token: admin });
      expect(gp.json.items.map((p: { uuid: string }) => p.uuid)).toEqual([dataset.policies.operators]);
      const operators = await t.request("GET", `/0.1/policies/${dataset.policies.operators}`, { token: admin });
      expect(operators.json).toMatchObject({
        name: "fx-operators",
        slug: "fx-operators",
        description: "ops",
        shared: false,
        read_only: false,
      });
      expect(sorted(operators.json.acl)).toEqual(sorted(dataset.alice_acl));
      // The shared policy of acme; from its sub-tenant, read-only and exposed as the sub-tenant's (as wazo-auth does).
      const shared = await t.request("GET", `/0.1/policies/${dataset.policies.shared}`, {
        token: admin,
        tenant: dataset.tenants.acme,
      });
      expect(shared.json).toMatchObject({
        name: "fx-shared",
        shared: true,
        read_only: false,
        tenant_uuid: dataset.tenants.acme,
        acl: dataset.bob_acl,
      });
      const fromSales = await t.request("GET", `/0.1/policies/${dataset.policies.shared}`, {
        token: admin,
        tenant: dataset.tenants.sales,
      });
      expect(fromSales.json).toMatchObject({
        name: "fx-shared",
        shared: false,
        read_only: true,
        tenant_uuid: dataset.tenants.sales,
        acl: dataset.bob_acl,
      });
      // wazo-auth's own master policy is left as wazo-auth wrote it (Tessera's start-up sync included).
      const master = await t.request("GET", "/0.1/policies/0ab40173-401c-4c1a-9b2d-1a2c3059ba31", { token: admin });
      expect(master.json).toMatchObject({
        slug: "wazo_default_master_user_policy",
        acl: ["#"],
        description:
          'Default Wazo policy for the "master" user\n\nDo not modify this policy, it can be modified in future Wazo upgrades\n',
      });
      const bobPolicies = await t.request("GET", `/0.1/users/${dataset.users.bob.uuid}/policies`, { token: admin });
      expect(bobPolicies.json.items.map((p: { uuid: string }) => p.uuid)).toEqual([dataset.policies.shared]);
    });

    test("external-auth data and sessions are served unchanged", async () => {
      const list = await t.request("GET", `/0.1/users/${dataset.users.alice.uuid}/external`, { token: admin });
      expect(list.json.items.find((i: { type: string }) => i.type === "mobile")).toMatchObject({
        type: "mobile",
        enabled: true,
      });
      const mobile = await t.request("GET", `/0.1/users/${dataset.users.alice.uuid}/external/mobile`, { token: admin });
      expect(mobile.status).toBe(200);
      expect(mobile.json.token).toBe("fcm-fx");
      const sessions = await t.request("GET", `/0.1/users/${dataset.users.bob.uuid}/sessions`, { token: admin });
      expect(sessions.json.items.map((s: { uuid: string }) => s.uuid)).toContain(
        "bbc78a90-f84d-416d-8cc3-0a5920bcab81",
      );
    });
  });
}
