// `npx bun bench/scim.ts`: SCIM provisioning (issue 41, docs/scim.md) on PostgreSQL.
//   1. A directory provisions a tenant from empty: BENCH_SCIM_USERS (default 100,000) `POST /Users`
//      as Entra ID sends them (8 in flight), each after its existence check (`GET /Users?filter=
//      userName eq "…"`): users per second, and the time the whole tenant takes.
//   2. The existence check at that size: `GET /Users?filter=userName eq "…"` (1 connection, a
//      different user each time), p50 / p99 (goal: p50 < 10 ms).
//   3. A deep page: `GET /Users?startIndex=…&count=100` at the end of the tenant, p50.
// BENCH_SCIM_SEED adds that many users to the tenant by SQL before 2 and 3 (a size the first step
// would take too long to reach on a small machine); the figures say which size they were taken at.
import postgres from "postgres";
import { login, scratchDatabase, startTessera } from "./lib.ts";

const USERS = Number(process.env.BENCH_SCIM_USERS ?? 100_000);
const SEED = Number(process.env.BENCH_SCIM_SEED ?? 0);
const IN_FLIGHT = 8;
const fmt = (n: number) => (n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : Math.round(n).toLocaleString("en"));
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

const db = await scratchDatabase();
if (!db) throw new Error("PostgreSQL unreachable (BENCH_DATABASE_URL)");
const tessera = await startTessera(`db_uri: "${db.url}"\nlog_level: warning`, ({ run }) =>
  run("bench/seed.ts", JSON.stringify([]), "0"),
);
try {
  const base = tessera.base;
  const admin = await login(base, "admin", "admin-password");
  const tenant = (await (
    await fetch(`${base}/tenants`, {
      method: "POST",
      headers: { "X-Auth-Token": admin },
      body: '{"name": "Directory"}',
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
  const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/scim+json" };
  const scim = `${base}/scim/v2`;
  const filterUrl = (userName: string) => `${scim}/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`;

  // 1. provisioning from empty
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    for (let i = next++; i < USERS; i = next++) {
      const userName = `user${i}@directory.example`;
      const check = await fetch(filterUrl(userName), { headers });
      if (check.status !== 200) throw new Error(`existence check: ${check.status}`);
      const r = await fetch(`${scim}/Users`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          schemas: [
            "urn:ietf:params:scim:schemas:core:2.0:User",
            "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User",
          ],
          externalId: crypto.randomUUID(),
          userName,
          active: true,
          emails: [{ primary: true, type: "work", value: userName }],
          name: { givenName: `Given${i}`, familyName: `Family${i}` },
          "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {
            employeeNumber: String(i),
            department: "Sales",
          },
        }),
      });
      if (r.status !== 201) throw new Error(`create: ${r.status} ${await r.text()}`);
      if (i % 5000 === 0) console.error(`  ${i} users…`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const elapsed = (performance.now() - started) / 1000;
  const rate = USERS / elapsed;

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
        [tenant.uuid, USERS + SEED - 100],
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
  const size = USERS + SEED;

  // 2. the existence check at that size
  const times: number[] = [];
  for (let k = 0; k < 1000; k++) {
    const i = Math.floor(Math.random() * USERS);
    const t0 = performance.now();
    const r = await fetch(filterUrl(`user${i}@directory.example`), { headers });
    await r.arrayBuffer();
    times.push(performance.now() - t0);
  }
  // 3. a deep page
  const deep: number[] = [];
  for (let k = 0; k < 50; k++) {
    const t0 = performance.now();
    const r = await fetch(`${scim}/Users?startIndex=${size - 100 - k}&count=100`, { headers });
    await r.arrayBuffer();
    deep.push(performance.now() - t0);
  }
  console.log(`| figure | value | goal |
|---|---:|---|
| SCIM provisioning from empty (existence check + \`POST /Users\`, ${IN_FLIGHT} in flight), PostgreSQL | ${fmt(rate)} users/s: ${USERS.toLocaleString("en")} users in ${fmt(elapsed)} s (100,000 in ${fmt(100_000 / rate / 60)} min) | 100,000 in minutes |
| \`GET /Users?filter=userName eq "…"\` (1 conn), ${size.toLocaleString("en")} users in the tenant | p50 ${fmt(pct(times, 0.5))} ms, p99 ${fmt(pct(times, 0.99))} ms | p50 < 10 ms |
| \`GET /Users?startIndex=${(size - 100).toLocaleString("en")}&count=100\` (1 conn) | p50 ${fmt(pct(deep, 0.5))} ms | bounded |`);
} finally {
  await tessera.stop();
  await db.drop();
}
