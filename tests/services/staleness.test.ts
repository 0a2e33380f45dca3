// token_check_staleness while cache invalidation is lost (PostgreSQL stopped: a private cluster,
// never the shared server). Strict (0): a cached token's check answers 503 at once. N seconds: it
// answers 204 from the cache for at most N seconds of deafness, then 503 — the staleness is bounded
// — and once notifications are heard again the cache is dropped, so a token revoked meanwhile is
// refused.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openDatabase } from "../../src/db/index.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { tokenFor } from "../helpers/fixtures.ts";
import { pgClusterAvailable, startPgCluster, type PgCluster } from "../helpers/pg-cluster.ts";

describe.skipIf(!pgClusterAvailable)("token checks while cache invalidation is lost", () => {
  let cluster: PgCluster;
  let strict: TestApp;
  let stale: TestApp;

  beforeAll(async () => {
    cluster = await startPgCluster();
    const open = () => openDatabase({ url: cluster.url, poolSize: 2, timeoutSeconds: 1 });
    strict = await createTestApp("postgres", { database: open, config: { db_timeout: 1, db_pool_size: 2 } });
    stale = await createTestApp("postgres", {
      database: open,
      config: { db_timeout: 1, db_pool_size: 2, token_check_staleness: 1.5 },
    });
  }, 120_000);
  afterAll(async () => {
    await strict?.close().catch(() => {});
    await stale?.close().catch(() => {});
    await cluster?.destroy();
  }, 60_000);

  const check = (t: TestApp, token: string) => t.request("HEAD", `/0.1/token/${token}?scope=x.y`).then((r) => r.status);

  test("strict answers 503 at once; 1.5 s of staleness answers from the cache, then 503; both refuse a token revoked meanwhile", async () => {
    const { token } = await tokenFor(strict.app, { acl: ["x.y"] });
    const { token: doomed } = await tokenFor(strict.app, { acl: ["x.y"] });
    for (const t of [strict, stale]) for (const tok of [token, doomed]) expect(await check(t, tok)).toBe(204);

    await cluster.stop();
    const lostAt = performance.now();
    try {
      await Bun.sleep(100); // both instances have seen their LISTEN connection close
      expect(strict.app.database.listening()).toBe(false);
      expect(await check(strict, token)).toBe(503);
      expect(await check(stale, token)).toBe(204);
      expect((await stale.request("GET", "/0.1/ready")).status).toBe(503); // still not ready: the database is away
      while (performance.now() - lostAt < 1400) {
        expect(await check(stale, token)).toBe(204);
        await Bun.sleep(100);
      }
      await Bun.sleep(1700 - (performance.now() - lostAt));
      expect(await check(stale, token)).toBe(503); // the bound is reached: no more answers from memory
    } finally {
      await cluster.start();
    }
    // Revoked by the strict instance as soon as the database is back: the stale one must refuse it too.
    const end = Date.now() + 20_000;
    while ((await strict.request("DELETE", `/0.1/token/${doomed}`)).status !== 200 && Date.now() < end)
      await Bun.sleep(100);
    while (!stale.app.database.listening() && Date.now() < end) await Bun.sleep(50);
    expect(await check(stale, doomed)).toBe(404);
    expect(await check(strict, doomed)).toBe(404);
    expect(await check(stale, token)).toBe(204);
  }, 60_000);
});
