// The session cap (`max_user_concurrent_sessions`, §5.3 step 2) holds exactly under concurrent
// logins: counted and inserted under a per-user lock, so that 150 logins racing for the last 10
// places leave exactly the cap — on PGlite, and on PostgreSQL with the logins split over two
// instances sharing one database.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openDatabase } from "../../src/db/index.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { scratchDatabase } from "../helpers/scratch-db.ts";
import { basicAuth } from "../helpers/service-process.ts";

const CAP = 100;
const EXISTING = 90;
const LOGINS = 150;

async function race(instances: TestApp[]) {
  const first = instances[0]!;
  const tenant = await createTenantRow(first.app);
  const name = `cap${crypto.randomUUID().slice(0, 8)}`;
  const user = await createUserRow(first.app, { tenantUuid: tenant, username: name, password: "pw" });
  for (let i = 0; i < EXISTING; i++) await tokenFor(first.app, { acl: [], tenantUuid: tenant, userUuid: user });
  const answers = await Promise.all(
    Array.from({ length: LOGINS }, (_, i) =>
      instances[i % instances.length]!.request("POST", "/0.1/token", { body: {}, headers: basicAuth(name, "pw") }).then(
        (r) => r.status,
      ),
    ),
  );
  const sessions = await first.app.db.execute(
    `select count(distinct session_uuid)::int as n from auth_token where auth_id = '${user}'` as never,
  );
  const n = Number((Array.isArray(sessions) ? sessions : (sessions as { rows: { n: number }[] }).rows)[0]!.n);
  return { answers, n };
}

function expectExactCap({ answers, n }: { answers: number[]; n: number }) {
  const tally: Record<number, number> = {};
  for (const s of answers) tally[s] = (tally[s] ?? 0) + 1;
  expect({ sessions: n, answers: tally }).toEqual({
    sessions: CAP,
    answers: { 200: CAP - EXISTING, 429: LOGINS - (CAP - EXISTING) },
  });
}

describe("the session cap under 150 concurrent logins [pglite]", () => {
  let t: TestApp;
  beforeAll(
    async () =>
      (t = await createTestApp("pglite", {
        config: { max_user_concurrent_sessions: CAP, password_hash_queue: 1000, db_timeout: 60 },
      })),
    60_000,
  );
  afterAll(() => t?.close());
  test("leaves exactly the cap", async () => expectExactCap(await race([t])), 60_000);
});

describe.skipIf(!process.env.TEST_DATABASE_URL)(
  "the session cap under 150 concurrent logins [postgres, two instances]",
  () => {
    let scratch: Awaited<ReturnType<typeof scratchDatabase>>;
    let a: TestApp;
    let b: TestApp;
    beforeAll(async () => {
      scratch = await scratchDatabase("tessera_cap");
      const open = () => openDatabase({ url: scratch.url, poolSize: 10 });
      // A queue for every login and a generous deadline: none is shed (503) on a loaded machine.
      const config = { max_user_concurrent_sessions: CAP, db_pool_size: 10, password_hash_queue: 1000, db_timeout: 60 };
      a = await createTestApp("postgres", { database: open, config });
      b = await createTestApp("postgres", { database: open, config });
    }, 60_000);
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await scratch?.drop();
    }, 30_000);
    test(
      "leaves exactly the cap, logins split over both instances",
      async () => expectExactCap(await race([a, b])),
      60_000,
    );
  },
);
