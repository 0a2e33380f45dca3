// Fail fast while PostgreSQL refuses connections (a private cluster stopped, never the shared
// server): once a connection attempt was refused, requests that need the database answer 503 in
// milliseconds instead of waiting for `db_timeout`, while one probe at a time goes through; the
// first connection that succeeds closes the circuit again.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openDatabase } from "../../src/db/index.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { createUserRow } from "../helpers/fixtures.ts";
import { pgClusterAvailable, startPgCluster, type PgCluster } from "../helpers/pg-cluster.ts";
import { basicAuth } from "../helpers/service-process.ts";

const DB_TIMEOUT = 2;

describe.skipIf(!pgClusterAvailable)("PostgreSQL refusing connections", () => {
  let cluster: PgCluster;
  let t: TestApp;
  beforeAll(async () => {
    cluster = await startPgCluster();
    t = await createTestApp("postgres", {
      database: () => openDatabase({ url: cluster.url, poolSize: 4, timeoutSeconds: DB_TIMEOUT }),
      config: { db_timeout: DB_TIMEOUT, db_pool_size: 4 },
    });
  }, 120_000);
  afterAll(async () => {
    await t?.close().catch(() => {});
    await cluster?.destroy();
  }, 60_000);

  test("logins answer 503 in milliseconds after the first refusals, and succeed again once it is back", async () => {
    await createUserRow(t.app, { username: "breaker", password: "pw" });
    const login = async () => {
      const started = performance.now();
      const r = await t.request("POST", "/0.1/token", { body: {}, headers: basicAuth("breaker", "pw") });
      return {
        status: r.status,
        ms: performance.now() - started,
        error: (r.json as { error_id?: string } | undefined)?.error_id,
      };
    };
    expect((await login()).status).toBe(200);
    await cluster.stop();
    try {
      const answers = [];
      // Paced (one login every ~20 ms, ~300 in all): back to back, the loop held a core for the 8 s.
      for (let end = performance.now() + 8000; performance.now() < end; await Bun.sleep(20))
        answers.push(await login());
      const late = answers.slice(answers.length / 2); // past the first seconds of the outage
      const slow = late.filter((a) => a.ms > 200);
      const times = late.map((a) => a.ms).sort((x, y) => x - y);
      console.log(
        `${answers.length} logins in 8 s of outage; later half: median ${times[times.length >> 1]!.toFixed(1)} ms, ${slow.length} over 200 ms`,
      );
      expect(answers.every((a) => a.status === 503 && a.error === "service-unavailable")).toBe(true);
      expect(late.length).toBeGreaterThan(20);
      expect(times[times.length >> 1]!).toBeLessThan(50);
    } finally {
      await cluster.start();
    }
    const back = performance.now();
    let last = await login();
    while (last.status !== 200 && performance.now() - back < 15_000) {
      await Bun.sleep(100);
      last = await login();
    }
    console.log(`logins succeed again ${(performance.now() - back).toFixed(0)} ms after PostgreSQL started`);
    expect(last.status).toBe(200);
  }, 90_000);
});
