// The users list is answered from memory while nothing it reads has changed (services/list-cache.ts).
// It must never serve a stale page — whoever made the change: this instance, another instance, or
// plain SQL — nor one tenant's page to another tenant.
import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { execRows, openDatabase } from "../../src/db/index.ts";
import { ListCache, listCache } from "../../src/services/list-cache.ts";
import { createTestApp, describeEachDb, type TestApp } from "../helpers/app.ts";
import { scratchDatabase } from "../helpers/scratch-db.ts";
import { adminToken, createUserRow, tenantFamily } from "../helpers/fixtures.ts";

async function listVersion(t: TestApp): Promise<string> {
  const [row] = await execRows<{ v: string }>(t.app.db, sql`select version::text as v from tessera.list_version`);
  return row!.v;
}

const usernames = (r: { json: { items: Array<{ username: string }> } }) => r.json.items.map((u) => u.username);

describeEachDb("users list cache", (get) => {
  test("a change made by plain SQL shows in the very next list, and a repeated list is served from memory", async () => {
    const t = get();
    const { tenant, admin } = await tenantFamily(t.app);
    const list = (query = "") => t.request("GET", `/0.1/users?limit=50${query}`, { token: admin, tenant });
    const uuid = await createUserRow(t.app, { tenantUuid: tenant, username: "cache-one" });
    const first = await list();
    expect(usernames(first)).toContain("cache-one");
    const cached = listCache(t.app).size;
    expect(cached).toBeGreaterThan(0);
    expect((await list()).text).toBe(first.text); // same question, same answer, nothing added

    // Each write bypasses the application: only the database knows of it.
    await t.app.db.execute(sql`update auth_user set firstname = 'Zed' where uuid = ${uuid}`);
    expect((await list()).json.items.find((u: { uuid: string }) => u.uuid === uuid).firstname).toBe("Zed");
    await t.app.db.execute(
      sql`insert into auth_email (uuid, address, main, confirmed, user_uuid) values (gen_random_uuid()::text, 'zed@example.com', true, true, ${uuid})`,
    );
    expect(
      (await list()).json.items
        .find((u: { uuid: string }) => u.uuid === uuid)
        .emails.map((e: { address: string }) => e.address),
    ).toEqual(["zed@example.com"]);
    expect((await list("&search=zed@exa")).json.filtered).toBe(1);
    const [group] = await execRows<{ uuid: string }>(
      t.app.db,
      sql`insert into auth_group (uuid, name, slug, tenant_uuid) values (gen_random_uuid()::text, 'g', 'g-cache', ${tenant}) returning uuid`,
    );
    expect((await list(`&group_uuid=${group!.uuid}`)).json.filtered).toBe(0);
    await t.app.db.execute(sql`insert into auth_user_group (group_uuid, user_uuid) values (${group!.uuid}, ${uuid})`);
    expect(usernames(await list(`&group_uuid=${group!.uuid}`))).toEqual(["cache-one"]);
    await t.app.db.execute(sql`delete from auth_user where uuid = ${uuid}`);
    const after = await list();
    expect(usernames(after)).not.toContain("cache-one");
    expect(after.json.total).toBe(after.json.items.length);

    // A password change is not part of any list: it leaves the cached pages in place.
    const before = await listVersion(t);
    await t.app.db.execute(sql`update auth_user set password_hash = 'x' where tenant_uuid = ${tenant}`);
    expect(await listVersion(t)).toBe(before);
    await t.app.db.execute(sql`update auth_user set lastname = 'y' where tenant_uuid = ${tenant}`);
    expect(BigInt(await listVersion(t))).toBe(BigInt(before) + 1n); // once per transaction, however many rows
  });

  test("a change through the API shows at once, also under concurrent requests", async () => {
    const t = get();
    const { tenant, admin } = await tenantFamily(t.app);
    for (let i = 0; i < 5; i++) {
      const busy = Array.from({ length: 8 }, () => t.request("GET", "/0.1/users?limit=100", { token: admin, tenant }));
      const created = await t.request("POST", "/0.1/users", { token: admin, tenant, body: { username: `api-${i}` } });
      expect(created.status).toBe(200);
      await Promise.all(busy);
      const now = await t.request("GET", "/0.1/users?limit=100", { token: admin, tenant });
      expect(usernames(now)).toContain(`api-${i}`);
      expect(now.json.total).toBe(i + 2); // with the tenant's administrator
    }
  });

  test("tenants never see each other's pages, whatever they ask", async () => {
    const t = get();
    const f = await tenantFamily(t.app);
    await createUserRow(t.app, { tenantUuid: f.tenant, username: "iso-parent" });
    await createUserRow(t.app, { tenantUuid: f.child, username: "iso-child" });
    await createUserRow(t.app, { tenantUuid: f.sibling, username: "iso-sibling" });
    const ask = (token: string, query: string, tenant?: string) =>
      t.request("GET", `/0.1/users${query}`, { token, tenant });
    for (let round = 0; round < 2; round++) {
      // the same query strings in every tenant: the second round is answered from memory
      for (const q of ["?limit=10", "?limit=10&recurse=true", "?search=iso"]) {
        const parent = usernames(await ask(f.admin, q));
        const child = usernames(await ask(f.childAdmin, q));
        const sibling = usernames(await ask(f.siblingAdmin, q));
        expect(parent).toContain("iso-parent");
        expect(parent.includes("iso-child")).toBe(q.includes("recurse"));
        expect(parent).not.toContain("iso-sibling");
        expect(child).toEqual(expect.arrayContaining(["iso-child"]));
        expect(child).not.toContain("iso-parent");
        expect(child).not.toContain("iso-sibling");
        expect(sibling).toContain("iso-sibling");
        expect(sibling).not.toContain("iso-parent");
        expect(sibling).not.toContain("iso-child");
        // the parent's admin narrowed to the child by Wazo-Tenant sees the child's page, not its own
        const narrowed = usernames(await ask(f.admin, q, f.child));
        expect(narrowed).toEqual(child);
      }
    }
    // A tenant moved under another (by SQL) changes what `recurse` covers: seen at once.
    await t.app.db.execute(sql`update auth_tenant set parent_uuid = ${f.tenant} where uuid = ${f.sibling}`);
    t.app.tenantTree.invalidate();
    expect(usernames(await ask(f.admin, "?limit=10&recurse=true"))).toContain("iso-sibling");
  });

  test("a list of everything is not kept when it is large", async () => {
    const t = get();
    const token = await adminToken(t.app);
    await t.app.db.execute(
      sql`insert into auth_user (uuid, username, firstname, tenant_uuid) select gen_random_uuid()::text, 'bulk-cache-' || i, repeat('n', 200), ${t.app.topTenantUuid} from generate_series(1, 3000) i`,
    );
    const cache = listCache(t.app);
    const r = await t.request("GET", "/0.1/users", { token });
    expect(r.json.items.length).toBeGreaterThan(3000);
    expect(r.text.length).toBeGreaterThan(512 * 1024);
    const size = cache.size;
    await t.request("GET", "/0.1/users", { token });
    expect(cache.size).toBe(size); // not stored: read again each time
  }, 60_000);
});

describe("ListCache", () => {
  test("keeps at most 2,000 answers, the least recently used leave first; a new version empties it", async () => {
    let version = 1n;
    const cache = new ListCache(async () => version);
    let loads = 0;
    const load = (i: number) => async () => {
      loads++;
      return { i };
    };
    for (let i = 0; i < 2100; i++) await cache.answer(`k${i}`, load(i));
    expect(cache.size).toBe(2000);
    expect(loads).toBe(2100);
    expect(await cache.answer("k2099", load(-1))).toBe(JSON.stringify({ i: 2099 })); // kept
    expect(loads).toBe(2100);
    await cache.answer("k0", load(0)); // the oldest left: loaded again
    expect(loads).toBe(2101);
    version = 2n;
    expect(await cache.answer("k2099", load(7))).toBe(JSON.stringify({ i: 7 }));
    expect(cache.size).toBe(1);
  });

  test("a request never shares a version read that started before it", async () => {
    let version = 1n;
    const reads: Array<() => void> = [];
    const cache = new ListCache(() => {
      const seen = version; // what this read's snapshot sees: the version when it starts
      return new Promise<bigint>((resolve) => reads.push(() => resolve(seen)));
    });
    const early = cache.currentVersion();
    version = 2n; // committed while the first read is under way
    const late1 = cache.currentVersion();
    const late2 = cache.currentVersion();
    expect(reads.length).toBe(1);
    reads.shift()!();
    expect(await early).toBe(1n);
    await Bun.sleep(0);
    expect(reads.length).toBe(1); // one read shared by both later callers, started after them
    reads.shift()!();
    expect([await late1, await late2]).toEqual([2n, 2n]);
    expect(cache.probes).toBe(2);
  });

  test("a read that does not end is not waited for past the patience", async () => {
    let calls = 0;
    const cache = new ListCache(() => (++calls === 1 ? new Promise<bigint>(() => {}) : Promise.resolve(5n)), 50);
    void cache.currentVersion(); // hangs (a connection silently gone)
    const queued = cache.currentVersion(); // behind it
    await Bun.sleep(60);
    expect(await cache.currentVersion()).toBe(5n);
    expect(calls).toBe(2);
    void queued;
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)("users list cache across instances [postgres]", () => {
  test("a user created through one instance is in the next list of another, even while its LISTEN connection is down", async () => {
    const scratch = await scratchDatabase("tessera_list_cache");
    const admin = postgres(scratch.url, { max: 1, onnotice: () => {} });
    const a = await createTestApp("postgres", {
      services: false,
      database: () => openDatabase({ url: scratch.url, poolSize: 3 }),
    });
    const b = await createTestApp("postgres", {
      services: false,
      database: () => openDatabase({ url: scratch.url, poolSize: 3 }),
    });
    try {
      const tokenA = await adminToken(a.app);
      const tokenB = await adminToken(b.app);
      const listB = () => b.request("GET", "/0.1/users?limit=100", { token: tokenB });
      for (let i = 0; i < 5; i++) {
        await listB(); // cached by B
        expect(
          (await a.request("POST", "/0.1/users", { token: tokenA, body: { username: `from-a-${i}` } })).status,
        ).toBe(200);
        expect(usernames(await listB())).toContain(`from-a-${i}`); // no wait for any notification
      }
      // B's LISTEN connection killed: the cache does not depend on it.
      let pid = b.app.database.listenerPid();
      for (let i = 0; i < 50 && !pid; i++) {
        await Bun.sleep(100); // known after the first heartbeat
        pid = b.app.database.listenerPid();
      }
      expect(pid).not.toBeNull();
      await admin`select pg_terminate_backend(${pid})`;
      await listB();
      expect((await a.request("POST", "/0.1/users", { token: tokenA, body: { username: "while-deaf" } })).status).toBe(
        200,
      );
      expect(usernames(await listB())).toContain("while-deaf");
      // Concurrent requests share their reads of the version.
      const cache = listCache(b.app);
      const probes = cache.probes;
      await Promise.all(Array.from({ length: 40 }, () => listB()));
      expect(cache.probes - probes).toBeLessThan(40);
    } finally {
      await a.close();
      await b.close();
      await admin.end();
      await scratch.drop();
    }
  }, 60_000);
});
