// postgres.js as Tessera runs it (patched by scripts/patch-dependencies.mjs, porsager/postgres#1208):
// a transaction whose connection is closed under it fails with a database error — a 503 for the
// caller — instead of killing the process with an uncaught TypeError from a deferred write, and
// the pool's next queries work (no stale bytes sent in front of a new connection's start-up).
import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { openDatabase } from "../../src/db/index.ts";
import { databaseFailure } from "../../src/db/failures.ts";
import { scratchDatabase } from "../helpers/scratch-db.ts";

const base = process.env.TEST_DATABASE_URL;

describe.skipIf(!base)("postgres.js when a connection closes under a query", () => {
  test("a reserved connection whose backend was terminated rejects its next queries (the process lives)", async () => {
    const scratch = await scratchDatabase("tessera_driver");
    const client = postgres(scratch.url, { max: 2, onnotice: () => {} });
    const killer = postgres(scratch.url, { max: 1, onnotice: () => {} });
    try {
      const reserved = await client.reserve();
      const [row] = await reserved`select pg_backend_pid() as pid`;
      await killer`select pg_terminate_backend(${row!.pid})`;
      await Bun.sleep(50);
      const first = await reserved`select 1`.then(
        () => null,
        (e: unknown) => e,
      );
      expect(databaseFailure(first)).not.toBeNull();
      const second = await reserved`select 1`.then(
        () => null,
        (e: unknown) => e,
      );
      expect(databaseFailure(second)).not.toBeNull();
      reserved.release();
      await Bun.sleep(20); // a deferred write would have thrown by now
      expect((await client`select 2 as two`)[0]!.two).toBe(2);
    } finally {
      await client.end({ timeout: 1 });
      await killer.end({ timeout: 1 });
      await scratch.drop();
    }
  }, 30_000);

  test("a transaction whose connection is terminated fails as 'database unavailable'; the next ones succeed", async () => {
    const scratch = await scratchDatabase("tessera_driver");
    const database = await openDatabase({ url: scratch.url, poolSize: 2, timeoutSeconds: 2 });
    try {
      for (let i = 0; i < 5; i++) {
        const failed = await database.db
          .transaction(async (tx) => {
            await tx.execute(sql`select pg_terminate_backend(pg_backend_pid())`);
          })
          .then(
            () => null,
            (e: unknown) => e,
          );
        expect(databaseFailure(failed)).not.toBeNull();
        await Bun.sleep(20);
        const started = performance.now();
        const rows = (await database.db.execute(sql`select 3 as three`)) as unknown as { three: number }[];
        expect(rows[0]!.three).toBe(3);
        expect(performance.now() - started).toBeLessThan(1500); // a fresh connection, not a connect timeout
      }
    } finally {
      await database.close();
      await scratch.drop();
    }
  }, 30_000);
});
