// The home-realm map (services/integrations/home-realm.ts) across instances: read once, then served
// from memory; a tenant's domains changed through instance A reach instance B by NOTIFY alone (B
// drops its map and reads it again), on PostgreSQL with two instances.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openDatabase } from "../../src/db/index.ts";
import { homeRealmOf, realmLoads } from "../../src/services/integrations/home-realm.ts";
import { createTestApp, databaseKinds, type TestApp } from "../helpers/app.ts";
import { adminToken } from "../helpers/fixtures.ts";
import { scratchDatabase } from "../helpers/scratch-db.ts";
import { until } from "../helpers/wait.ts";

describe.skipIf(!databaseKinds().includes("postgres"))("home-realm map [postgres, two instances]", () => {
  let scratch: Awaited<ReturnType<typeof scratchDatabase>>;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    scratch = await scratchDatabase("tessera_home_realm");
    const open = () => openDatabase({ url: scratch.url, poolSize: 4 });
    a = await createTestApp("postgres", { database: open });
    b = await createTestApp("postgres", { database: open });
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await scratch?.drop();
  }, 30_000);

  test("B serves from memory, and hears A's domain changes", async () => {
    expect(await homeRealmOf(b.app, "x@corp.example")).toBeNull();
    const loads = realmLoads(b.app);
    for (let i = 0; i < 5; i++) expect(await homeRealmOf(b.app, `u${i}@corp.example`)).toBeNull();
    expect(realmLoads(b.app)).toBe(loads); // no read per lookup
    const admin = await adminToken(a.app);
    const made = await a.request("POST", "/0.1/tenants", {
      token: admin,
      body: { name: "corp", domain_names: ["corp.example"] },
    });
    expect(made.status).toBe(200);
    const tenant = made.json.uuid as string;
    await until(async () => (await homeRealmOf(b.app, "x@Corp.Example"))?.tenantUuid === tenant);
    const put = await a.request("PUT", `/0.1/tenants/${tenant}`, {
      token: admin,
      body: { name: "corp", domain_names: ["corp2.example"] },
    });
    expect(put.status).toBe(204);
    await until(async () => (await homeRealmOf(b.app, "x@corp.example")) === null);
    expect((await homeRealmOf(b.app, "x@corp2.example"))?.tenantUuid).toBe(tenant);
    expect((await a.request("DELETE", `/0.1/tenants/${tenant}`, { token: admin })).status).toBe(204);
    await until(async () => (await homeRealmOf(b.app, "x@corp2.example")) === null);
  }, 30_000);
});
