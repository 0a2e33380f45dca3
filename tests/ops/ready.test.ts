// GET|HEAD /0.1/ready (readiness, no authentication): 200 with every check ok; 503 with the one
// error body naming what is not ready — migrations missing (a schema older than the code), the
// database stopped and cache invalidation deaf (private cluster, never the shared server).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { openDatabase } from "../../src/db/index.ts";
import { createTestApp, describeEachDb, type TestApp } from "../helpers/app.ts";
import { pgClusterAvailable, startPgCluster, type PgCluster } from "../helpers/pg-cluster.ts";

describeEachDb("readiness", (get) => {
  test("ready: 200 with each check ok, no token needed; HEAD answers the same status without a body", async () => {
    const res = await get().request("GET", "/0.1/ready");
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ database: "ok", migrations: "ok", cache_invalidation: "ok" });
    const head = await get().request("HEAD", "/0.1/ready");
    expect(head.status).toBe(200);
    expect(head.text).toBe("");
  });

  test("a schema without this version's newest migration is not ready: 503 naming migrations", async () => {
    const { db } = get().app;
    const newest = (await db.execute(
      sql`select id, hash, created_at from "drizzle"."__drizzle_migrations" order by created_at desc limit 1`,
    )) as unknown;
    const row = (Array.isArray(newest) ? newest : (newest as { rows: unknown[] }).rows)[0] as {
      id: number;
      hash: string;
      created_at: string;
    };
    await db.execute(sql`delete from "drizzle"."__drizzle_migrations" where id = ${row.id}`);
    try {
      const res = await get().request("GET", "/0.1/ready");
      expect(res.status).toBe(503);
      expect(res.json.error_id).toBe("not-ready");
      expect(res.json.resource).toBe("ready");
      expect(res.json.details).toEqual({ database: "ok", migrations: "fail", cache_invalidation: "ok" });
      expect(res.json.message).toContain("migrations");
      expect((await get().request("HEAD", "/0.1/ready")).status).toBe(503);
    } finally {
      await db.execute(
        sql`insert into "drizzle"."__drizzle_migrations" (id, hash, created_at) values (${row.id}, ${row.hash}, ${row.created_at})`,
      );
    }
    expect((await get().request("GET", "/0.1/ready")).status).toBe(200);
  });
});

describe.skipIf(!pgClusterAvailable)("readiness through a PostgreSQL outage (private cluster)", () => {
  let cluster: PgCluster;
  let t: TestApp;

  beforeAll(async () => {
    cluster = await startPgCluster();
    t = await createTestApp("postgres", {
      database: () => openDatabase({ url: cluster.url, poolSize: 2, timeoutSeconds: 1 }),
      config: { db_timeout: 1, db_pool_size: 2 },
    });
  }, 120_000);
  afterAll(async () => {
    await t?.close().catch(() => {});
    await cluster?.destroy();
  }, 60_000);

  test("PostgreSQL stopped: 503 naming the database and cache invalidation, in time; back to 200 once it is up and heard again", async () => {
    expect((await t.request("GET", "/0.1/ready")).status).toBe(200);
    await cluster.stop();
    try {
      const started = performance.now();
      const res = await t.request("GET", "/0.1/ready");
      expect(performance.now() - started).toBeLessThan(2000); // bounded by half of db_timeout
      expect(res.status).toBe(503);
      expect(res.json.details.database).toBe("fail");
      expect(res.json.details.migrations).toBe("fail");
      expect(res.json.details.cache_invalidation).toBe("fail");
      expect(res.json.message).toContain("unreachable");
      // Liveness says the same here (database down); readiness is the stricter of the two.
      expect((await t.request("HEAD", "/0.1/status")).status).toBe(503);
    } finally {
      await cluster.start();
    }
    const end = Date.now() + 30_000;
    while ((await t.request("GET", "/0.1/ready")).status !== 200 && Date.now() < end) await Bun.sleep(100);
    expect((await t.request("GET", "/0.1/ready")).json).toEqual({
      database: "ok",
      migrations: "ok",
      cache_invalidation: "ok",
    });
  }, 60_000);
});
