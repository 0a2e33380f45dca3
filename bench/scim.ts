// `npx bun bench/scim.ts`: SCIM provisioning (issue 41, docs/scim.md) on PostgreSQL.
//   1. A directory provisions a tenant from empty: BENCH_SCIM_USERS (default 100,000) `POST /Users`
//      as Entra ID sends them (8 in flight), each after its existence check (`GET /Users?filter=
//      userName eq "…"`): users per second, the time the whole tenant takes, and the server's CPU
//      time per created user (a figure a shared machine stretches far less than the wall rate).
//   2. The same number of users into a second tenant through `POST /Bulk` (100 operations a
//      request, 2 in flight).
//   3. The existence check at that size: `GET /Users?filter=userName eq "…"` (1 connection, a
//      different user each time), p50 / p99 (goal: p50 < 10 ms).
//   4. A deep page: `GET /Users?startIndex=…&count=100` at the end of the tenant, p50.
// BENCH_SCIM_SECONDS (default 900) bounds each provisioning step: a step that reaches it stops
// there and the figures say how many users it made (the 100,000 time is then extrapolated, and
// marked so). BENCH_SCIM_USERS=2000 is a smoke run of a minute or two.
// BENCH_SCIM_SEED adds that many users to the tenant by SQL before 3 and 4 (a size the first step
// would take too long to reach on a small machine); the figures say which size they were taken at.
import postgres from "postgres";
import { cpuSeconds, login, scratchDatabase, startTessera } from "./lib.ts";

const USERS = Number(process.env.BENCH_SCIM_USERS ?? 100_000);
const SEED = Number(process.env.BENCH_SCIM_SEED ?? 0);
const BUDGET_MS = Number(process.env.BENCH_SCIM_SECONDS ?? 900) * 1000;
const IN_FLIGHT = 8;
const BULK_SIZE = 100;
const BULK_IN_FLIGHT = 2;
const fmt = (n: number) => (n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : Math.round(n).toLocaleString("en"));
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

const db = await scratchDatabase();
if (!db) throw new Error("PostgreSQL unreachable (BENCH_DATABASE_URL)");
const tessera = await startTessera(`db_uri: "${db.url}"\nlog_level: warning\ndb_timeout: 60`, ({ run }) =>
  run("bench/seed.ts", JSON.stringify([]), "0"),
);
try {
  const base = tessera.base;
  const admin = await login(base, "admin", "admin-password");
  const directory = async (name: string) => {
    const tenant = (await (
      await fetch(`${base}/tenants`, {
        method: "POST",
        headers: { "X-Auth-Token": admin },
        body: JSON.stringify({ name }),
      })
    ).json()) as { uuid: string };
    const token = (
      (await (
        await fetch(`${base}/scim/tokens`, {
          method: "POST",
          headers: { "X-Auth-Token": admin, "Wazo-Tenant": tenant.uuid },
          body: '{"name": "bench"}',
        })
      ).json()) as { token: string }
    ).token;
    return { tenant, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/scim+json" } };
  };
  const { tenant, headers } = await directory("Directory");
  const scim = `${base}/scim/v2`;
  const filterUrl = (userName: string) => `${scim}/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`;

  const userOf = (i: number, userName: string) => ({
    schemas: [
      "urn:ietf:params:scim:schemas:core:2.0:User",
      "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User",
    ],
    externalId: crypto.randomUUID(),
    userName,
    active: true,
    emails: [{ primary: true, type: "work", value: userName }],
    name: { givenName: `Given${i}`, familyName: `Family${i}` },
    "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": { employeeNumber: String(i), department: "Sales" },
  });
  /** Runs `work` on 0…USERS-1 from `inFlight` workers (each taking `step` at a time) until done or out of time. */
  const provision = async (inFlight: number, step: number, work: (from: number, to: number) => Promise<void>) => {
    let next = 0;
    let done = 0;
    const cpu0 = cpuSeconds(tessera.pid);
    const started = performance.now();
    const worker = async () => {
      while (next < USERS && performance.now() - started < BUDGET_MS) {
        const from = next;
        const to = Math.min(USERS, from + step);
        next = to;
        await work(from, to);
        done += to - from;
        if (Math.floor(done / 5000) !== Math.floor((done - (to - from)) / 5000)) console.error(`  ${done} users…`);
      }
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
    const seconds = (performance.now() - started) / 1000;
    return { done, seconds, rate: done / seconds, cpuMs: ((cpuSeconds(tessera.pid) - cpu0) * 1000) / done };
  };

  // 1. provisioning from empty, one POST per user after its existence check
  const byPost = await provision(IN_FLIGHT, 1, async (i) => {
    const userName = `user${i}@directory.example`;
    const check = await fetch(filterUrl(userName), { headers });
    if (check.status !== 200) throw new Error(`existence check: ${check.status}`);
    await check.arrayBuffer();
    const r = await fetch(`${scim}/Users`, { method: "POST", headers, body: JSON.stringify(userOf(i, userName)) });
    if (r.status !== 201) throw new Error(`create: ${r.status} ${await r.text()}`);
    await r.arrayBuffer();
  });
  const USERS_MADE = byPost.done;

  // 2. the same through /Bulk, into a second tenant
  const second = await directory("Directory by Bulk");
  const byBulk = await provision(BULK_IN_FLIGHT, BULK_SIZE, async (from, to) => {
    const Operations = [];
    for (let i = from; i < to; i++)
      Operations.push({
        method: "POST",
        bulkId: `u${i}`,
        path: "/Users",
        data: userOf(i, `bulk${i}@directory.example`),
      });
    const r = await fetch(`${scim}/Bulk`, {
      method: "POST",
      headers: second.headers,
      body: JSON.stringify({ schemas: ["urn:ietf:params:scim:api:messages:2.0:BulkRequest"], Operations }),
    });
    const answer = (await r.json()) as { Operations?: Array<{ status: string }> };
    const failed = answer.Operations?.find((o) => o.status !== "201");
    if (r.status !== 200 || failed) throw new Error(`bulk: ${r.status} ${JSON.stringify(failed ?? answer)}`);
  });

  // optional: more users by SQL, so the reads are measured at a larger size
  if (SEED > 0) {
    const client = postgres(db.url, { max: 1, onnotice: () => {} });
    await client.unsafe(
      `insert into auth_user (uuid, username, tenant_uuid, purpose)
       select gen_random_uuid()::text, 'seeded' || i || '@directory.example', $1, 'user' from generate_series(1, $2) i`,
      [tenant.uuid, SEED],
    );
    // As autovacuum leaves it: statistics, and the visibility map an index-only scan reads.
    await client.unsafe("vacuum analyze auth_user");
    if (process.env.BENCH_SCIM_EXPLAIN) {
      const plan = await client.unsafe(
        `explain analyze select u.uuid from auth_user u where u.tenant_uuid = $1 and u.purpose = 'user'
         order by u.uuid limit 100 offset $2`,
        [tenant.uuid, USERS_MADE + SEED - 100],
      );
      console.error(plan.map((r) => r["QUERY PLAN"]).join("\n"));
      const count = await client.unsafe(
        `explain analyze select count(*) from auth_user u where u.tenant_uuid = $1 and u.purpose = 'user'`,
        [tenant.uuid],
      );
      console.error(count.map((r) => r["QUERY PLAN"]).join("\n"));
    }
    await client.end();
  }
  const size = USERS_MADE + SEED;

  // 2. the existence check at that size
  const times: number[] = [];
  for (let k = 0; k < 1000; k++) {
    const i = Math.floor(Math.random() * USERS_MADE);
    const t0 = performance.now();
    const r = await fetch(filterUrl(`user${i}@directory.example`), { headers });
    await r.arrayBuffer();
    times.push(performance.now() - t0);
  }
  // 3. a deep page
  const deep: number[] = [];
  for (let k = 0; k < 50; k++) {
    const t0 = performance.now();
    const r = await fetch(`${scim}/Users?startIndex=${Math.max(1, size - 100 - k)}&count=100`, { headers });
    await r.arrayBuffer();
    deep.push(performance.now() - t0);
  }
  const row = (how: string, p: typeof byPost) =>
    `| SCIM provisioning from empty (${how}), PostgreSQL | ${fmt(p.rate)} users/s: ${p.done.toLocaleString("en")} users in ${fmt(p.seconds)} s (100,000 in ${fmt(100_000 / p.rate / 60)} min${p.done < 100_000 ? ", extrapolated" : ""}); server CPU ${fmt(p.cpuMs)} ms per user | 100,000 in minutes |`;
  console.log(`| figure | value | goal |
|---|---:|---|
${row(`existence check + \`POST /Users\`, ${IN_FLIGHT} in flight`, byPost)}
${row(`\`POST /Bulk\` of ${BULK_SIZE} operations, ${BULK_IN_FLIGHT} in flight`, byBulk)}
| \`GET /Users?filter=userName eq "…"\` (1 conn), ${size.toLocaleString("en")} users in the tenant | p50 ${fmt(pct(times, 0.5))} ms, p99 ${fmt(pct(times, 0.99))} ms | p50 < 10 ms |
| \`GET /Users?startIndex=${(size - 100).toLocaleString("en")}&count=100\` (1 conn) | p50 ${fmt(pct(deep, 0.5))} ms | bounded |`);
} finally {
  await tessera.stop();
  await db.drop();
}
