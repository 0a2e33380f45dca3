// The embedded database's thread starts before the configuration is read (src/db/pglite-early.ts),
// on a guess from the configuration file's text; the configuration decides, and a thread started on
// a wrong guess is stopped.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { namesPostgres } from "../../src/db/pglite-early.ts";
import { scratchDatabase } from "../helpers/scratch-db.ts";
import { spawnService, waitForService } from "../helpers/service-process.ts";
import { tempDirs } from "../helpers/temp-dirs.ts";

test("the guess: a top-level db_uri with a value names PostgreSQL; anything else the embedded database", () => {
  for (const text of [
    "db_uri: postgres://db/auth",
    'log_level: info\ndb_uri: "postgres://db/auth" # the platform database\n',
    "db_uri:postgresql://u@h/d",
  ])
    expect(namesPostgres(text)).toBe(true);
  for (const text of [
    "",
    "db_uri:",
    "db_uri: null",
    "db_uri: ~  # embedded",
    'db_uri: ""',
    "# db_uri: postgres://db/auth",
    "database:\n  db_uri: postgres://db/auth",
    "data_dir: /var/lib/tessera",
  ])
    expect(namesPostgres(text)).toBe(false);
});

/** Bun names its web Workers' threads "Worker" (the password-hashing threads start only on demand). */
function workerThreads(pid: number): number {
  return readdirSync(`/proc/${pid}/task`).filter(
    (tid) => readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim() === "Worker",
  ).length;
}

describe("the early thread in the running process", () => {
  const tempDir = tempDirs("tessera-early-");

  test("embedded: the one database thread serves", async () => {
    const s = spawnService(tempDir(), "");
    try {
      expect(await waitForService(s.base, 30)).toBe(true);
      expect(workerThreads(s.proc.pid)).toBe(1);
    } finally {
      s.proc.kill("SIGTERM");
      expect(await s.exitWithin(10_000)).toBe(0);
    }
  }, 60_000);

  test.skipIf(!process.env.TEST_DATABASE_URL)(
    "PostgreSQL, guessed right or wrong (a quoted key): no embedded thread is left running",
    async () => {
      const db = await scratchDatabase("tessera_early", { migrated: true });
      try {
        for (const key of ["db_uri", '"db_uri"']) {
          const s = spawnService(tempDir(), `${key}: "${db.url}"`);
          try {
            expect(await waitForService(s.base, 30)).toBe(true);
            // a dropped thread stops asynchronously: give it a moment
            for (let i = 0; i < 50 && workerThreads(s.proc.pid) > 0; i++) await Bun.sleep(20);
            expect(workerThreads(s.proc.pid)).toBe(0);
          } finally {
            s.proc.kill("SIGTERM");
            expect(await s.exitWithin(10_000)).toBe(0);
          }
        }
      } finally {
        await db.drop();
      }
    },
    60_000,
  );
});
