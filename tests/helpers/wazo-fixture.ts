// The database wazo-auth wrote (tests/fixtures/wazo-auth-db): loaded with psql into a fresh
// PostgreSQL database on the TEST_DATABASE_URL server, dropped afterwards.
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import dataset from "../fixtures/wazo-auth-db/dataset.json";
import { scratchDatabase } from "./scratch-db.ts";

export { dataset };
export const DUMP = fileURLToPath(new URL("../fixtures/wazo-auth-db/dump.sql", import.meta.url));
/** The `xivo_uuid` of the wazo-auth that wrote the fixture (an operator keeps it: XIVO_UUID). */
export const FIXTURE_XIVO_UUID = "6cd22a39-b965-4de4-ae9f-1a106a575829";
export const FIXTURE_ADMIN = { username: "admin", password: "adminpass", uuid: "8dc91148-18b9-41f9-8c98-7a4b57ae6ea5" };

export interface FixtureDatabase {
  url: string;
  /** A client on it, for catalogue queries. */
  sql: postgres.Sql;
  drop(): Promise<void>;
}

export async function loadWazoFixture(): Promise<FixtureDatabase> {
  const scratch = await scratchDatabase("tessera_wazo");
  const url = new URL(scratch.url);
  const proc = Bun.spawn(["psql", "-q", "-v", "ON_ERROR_STOP=1", "-d", url.toString(), "-f", DUMP], {
    stdout: "ignore",
    stderr: "pipe",
  });
  if ((await proc.exited) !== 0)
    throw new Error(`psql could not load the fixture: ${await new Response(proc.stderr).text()}`);
  const sql = postgres(url.toString(), { max: 2, onnotice: () => {} });
  return {
    url: url.toString(),
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      await scratch.drop();
    },
  };
}

/** The drop-in suites need a PostgreSQL server to hold the wazo-auth database. */
export function fixtureServerMissing(): boolean {
  if (process.env.TEST_DATABASE_URL) return false;
  console.warn("drop-in tests skipped: set TEST_DATABASE_URL to load the wazo-auth fixture into PostgreSQL");
  return true;
}
