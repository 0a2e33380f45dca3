// `npm run bench -- audit`: the audit trail (issue 26, docs/audit.md) on PostgreSQL.
//   1. GET /0.1/audit over BENCH_AUDIT_ROWS (default 10,000,000) entries spread over 1,000 tenants
//      and 90 days: p50 / p99 of one connection asking, each request a different filtered page
//      (goal: p50 < 50 ms). The rows are loaded by SQL (generate_series, one million per statement,
//      indexes built after), with the chaining trigger off: their hashes are not a valid chain —
//      this measures the reads, not `tessera audit verify`.
//   2. The cost of recording: `POST /0.1/token` (4 connections, pbkdf2_sha512 so the hash does not
//      drown the difference) and admin writes (`PUT /0.1/users/{u}`, 4 connections: the same user —
//      the writes queue on its row — and 200 users in turn, bench/put-users.lua), with the
//      entries recorded and with the insert neutralised (a BEFORE trigger that drops the row: the
//      statement still runs, the row and its chain step are skipped), interleaved rounds (BENCH_AUDIT_ROUNDS, default 5), medians.
// BENCH_AUDIT_DATABASE reuses a database already loaded by an earlier run (its name is printed).
import { PG_URL, login, measure, root, startTessera, type WrkResult } from "./lib.ts";

const ROWS = Number(process.env.BENCH_AUDIT_ROWS ?? 10_000_000);
const TENANTS = 1000;
/** Interleaved rounds of the recording's cost (recorded, neutralised); medians are reported. */
const ROUNDS = Number(process.env.BENCH_AUDIT_ROUNDS ?? 5);
const ACTIONS = [
  "login.success",
  "login.failure",
  "login.throttled",
  "refresh_token.use",
  "token.revoke",
  "user.create",
  "user.update",
  "user.delete",
  "user.password.change",
  "group.create",
  "group.user.add",
  "policy.update",
  "user.policy.attach",
  "session.delete",
  "tenant.update",
  "mfa.totp.enrol",
];

export interface AuditRow {
  figure: string;
  value: string;
  goal: string;
}

const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0) : "?");
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const median = (xs: number[]) => pct(xs, 0.5);

async function sqlClient(url: string) {
  const { default: postgres } = await import("postgres");
  return postgres(url, { max: 1, onnotice: () => {} });
}

/** A database for the section: BENCH_AUDIT_DATABASE, or a new one (kept: loading it takes minutes). */
async function database(): Promise<{ url: string; fresh: boolean }> {
  const url = new URL(PG_URL);
  if (process.env.BENCH_AUDIT_DATABASE) {
    url.pathname = `/${process.env.BENCH_AUDIT_DATABASE}`;
    return { url: url.toString(), fresh: false };
  }
  const name = `tessera_bench_audit_${Date.now()}`;
  const admin = await sqlClient(PG_URL);
  await admin.unsafe(`create database "${name}"`);
  await admin.end();
  url.pathname = `/${name}`;
  console.error(`audit bench database: ${name} (BENCH_AUDIT_DATABASE=${name} reuses it; drop it when done)`);
  return { url: url.toString(), fresh: true };
}

const INDEXES = [
  "tessera_audit_uuid_idx",
  "tessera_audit_chain_idx",
  "tessera_audit_tenant_time_idx",
  "tessera_audit_time_idx",
  "tessera_audit_actor_idx",
  "tessera_audit_target_idx",
  "audit_action_idx",
  "audit_outcome_idx",
];

/** Tenants under the master, then `ROWS` entries: one million per statement, indexes rebuilt after. */
async function load(url: string): Promise<void> {
  const c = await sqlClient(url);
  const t0 = performance.now();
  await c.unsafe(`insert into auth_tenant (uuid, name, slug, parent_uuid)
    select md5('tenant' || i)::uuid::text, 'bench ' || i, 'bench' || i, (select uuid from auth_tenant where uuid = parent_uuid)
    from generate_series(0, ${TENANTS} - 1) i`);
  const defs = await c.unsafe<{ indexdef: string }[]>(
    `select indexdef from pg_indexes where schemaname = 'tessera' and indexname in (${INDEXES.map((i) => `'${i}'`).join(",")})`,
  );
  for (const i of INDEXES) await c.unsafe(`drop index if exists tessera."${i}"`);
  await c.unsafe("alter table tessera.audit disable trigger audit_append");
  const actions = `(array[${ACTIONS.map((a) => `'${a}'`).join(",")}])`;
  for (let from = 1; from <= ROWS; from += 1_000_000) {
    const to = Math.min(ROWS, from + 999_999);
    // Entry i: tenant i % 1000 (chain position i / 1000 + 1), 90 days ending now, 10,000 actors,
    // 100,000 targets; logins are half of the entries and 5 % of them failures.
    await c.unsafe(`insert into tessera.audit (uuid, time, tenant_uuid, actor_user_uuid, actor_session_uuid,
        actor_tenant_uuid, actor_address, actor_user_agent, action, target_kind, target_uuid, target_tenant_uuid,
        outcome, changes, chain_seq, hash)
      overriding system value
      select tessera.uuid_v7(),
        now() - interval '90 days' + (i::float8 / ${ROWS}) * interval '90 days',
        md5('tenant' || (i % ${TENANTS}))::uuid::text,
        md5('actor' || (i % 10000))::uuid::text, md5('session' || (i % 50000))::uuid::text,
        md5('tenant' || (i % ${TENANTS}))::uuid::text, '10.' || (i % 250) || '.' || (i % 200) || '.1', 'bench/1',
        a.action, case when a.action like 'login.%' then 'user' else split_part(a.action, '.', 1) end,
        md5('target' || (i % 100000))::uuid::text, md5('tenant' || (i % ${TENANTS}))::uuid::text,
        case when a.action = 'login.failure' then 'invalid_credentials' when a.action = 'login.throttled' then 'throttled' else 'success' end,
        case when a.action = 'user.update' then '[{"field":"firstname","old":"a","new":"b"}]'::jsonb else '[]'::jsonb end,
        i / ${TENANTS} + 1, '\\x00'::bytea
      from generate_series(${from}, ${to}) i,
        lateral (select case when i % 2 = 0 then (case when i % 40 = 2 then 'login.failure' else 'login.success' end)
                 else ${actions}[1 + (i / 2) % ${ACTIONS.length}] end as action) a`);
    console.error(`  audit rows loaded: ${to.toLocaleString("en")} (${fmt((performance.now() - t0) / 1000)} s)`);
  }
  for (const d of defs) await c.unsafe(d.indexdef);
  await c.unsafe("alter table tessera.audit enable trigger audit_append");
  await c.unsafe(`insert into tessera.audit_chain (tenant_uuid, lane, seq, hash, anchor_seq, anchor_hash)
    select tenant_uuid, 0, max(chain_seq), '\\x00'::bytea, 0, '\\x'::bytea from tessera.audit group by tenant_uuid
    on conflict (tenant_uuid, lane) do update set seq = excluded.seq`);
  await c.unsafe("vacuum analyze tessera.audit");
  console.error(`  loaded and indexed in ${fmt((performance.now() - t0) / 1000)} s`);
  await c.end();
}

async function timedGet(url: string, token: string, tenant?: string): Promise<number> {
  const t = performance.now();
  const r = await fetch(url, { headers: { "X-Auth-Token": token, ...(tenant ? { "Wazo-Tenant": tenant } : {}) } });
  const body = await r.text();
  if (r.status !== 200) throw new Error(`${url}: ${r.status} ${body}`);
  return performance.now() - t;
}

/** Neutralises (or restores) the recording: a BEFORE trigger that drops the row, firing first. */
async function recording(url: string, on: boolean): Promise<void> {
  const c = await sqlClient(url);
  await c.unsafe(
    `create or replace function tessera.audit_skip() returns trigger language plpgsql as $$ begin return null; end $$`,
  );
  await c.unsafe("drop trigger if exists aaa_audit_skip on tessera.audit");
  if (!on)
    await c.unsafe(
      "create trigger aaa_audit_skip before insert on tessera.audit for each row execute function tessera.audit_skip()",
    );
  await c.end();
}

export async function auditSection(seconds: number): Promise<AuditRow[]> {
  const rows: AuditRow[] = [];
  const db = await database();
  const t = await startTessera(
    `db_uri: "${db.url}"\nlog_level: warning\npassword_hash_algorithm: pbkdf2_sha512\npassword_hash_iterations: 1000`,
    ({ run }) => {
      if (db.fresh) run("bench/seed.ts", "[]", "0");
    },
  );
  try {
    if (db.fresh) await load(db.url);
    const admin = await login(t.base, "admin", "admin-password");
    const since = (days: number) => encodeURIComponent(new Date(Date.now() - days * 86_400_000).toISOString());
    const tenant = (i: number) =>
      new Bun.CryptoHasher("md5")
        .update(`tenant${i}`)
        .digest("hex")
        .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, "$1-$2-$3-$4-$5");
    const actor = (i: number) =>
      new Bun.CryptoHasher("md5")
        .update(`actor${i}`)
        .digest("hex")
        .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, "$1-$2-$3-$4-$5");
    const target = (i: number) =>
      new Bun.CryptoHasher("md5")
        .update(`target${i}`)
        .digest("hex")
        .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, "$1-$2-$3-$4-$5");
    const c = await sqlClient(db.url);
    const [mid] = await c.unsafe<{ uuid: string }[]>(
      `select uuid from tessera.audit order by time desc, id desc offset ${Math.floor(ROWS / 2)} limit 1`,
    );
    await c.end();
    const queries: Array<[string, (i: number) => string, ((i: number) => string) | undefined]> = [
      ["newest page, no filter (master tenant: every entry)", () => "limit=50", undefined],
      ["`action=user.*` (prefix)", () => "limit=50&action=user.*", undefined],
      ["`actor_uuid=` one of 10,000 actors", (i) => `limit=50&actor_uuid=${actor(i % 10000)}`, undefined],
      ["`target_uuid=` one of 100,000 targets", (i) => `limit=50&target_uuid=${target(i % 100000)}`, undefined],
      [
        "`outcome=invalid_credentials&since=` 7 days",
        () => `limit=50&outcome=invalid_credentials&since=${since(7)}`,
        undefined,
      ],
      [
        "one tenant (`Wazo-Tenant`, 10,000 entries), `since=` 30 days",
        () => `limit=50&since=${since(30)}`,
        (i) => tenant(i % TENANTS),
      ],
      [
        `a page ${Math.floor(ROWS / 2).toLocaleString("en")} entries deep (\`after=\`, keyset)`,
        () => `limit=50&after=${mid?.uuid}`,
        undefined,
      ],
      [
        "`until=` 45 days ago, `action=login.failure`",
        () => `limit=50&action=login.failure&until=${since(45)}`,
        undefined,
      ],
    ];
    for (const [name, q, scope] of queries) {
      const times: number[] = [];
      for (let i = 0; i < 5; i++) await timedGet(`${t.base}/audit?${q(i)}`, admin, scope?.(i)); // warm
      for (let i = 0; i < 60; i++)
        times.push(await timedGet(`${t.base}/audit?${q(i * 7919)}`, admin, scope?.(i * 7919)));
      rows.push({
        figure: `\`GET /0.1/audit\` over ${ROWS.toLocaleString("en")} entries: ${name} (1 conn)`,
        value: `p50 ${fmt(median(times))} ms, p99 ${fmt(pct(times, 0.99))} ms`,
        goal: `p50 < 50 ms: ${median(times) < 50 ? "met" : "NOT met"}`,
      });
      console.error(rows.at(-1));
    }

    // The cost of recording, interleaved rounds (the machine's load shifts both alike).
    const user = (await (
      await fetch(`${t.base}/users?search=bench`, { headers: { "X-Auth-Token": admin } })
    ).json()) as { items: Array<{ uuid: string; username: string }> };
    const bench = user.items.find((u) => u.username === "bench")!;
    // 200 users of the master tenant for admin writes that share no row (made once per database).
    const spread: string[] = [];
    for (let i = 0; i < 200; i++) {
      const name = `bench-write-${i}`;
      const found = (await (
        await fetch(`${t.base}/users?search=${name}`, { headers: { "X-Auth-Token": admin } })
      ).json()) as { items: Array<{ uuid: string; username: string }> };
      let uuid = found.items.find((u) => u.username === name)?.uuid;
      if (!uuid) {
        const r = await fetch(`${t.base}/users`, {
          method: "POST",
          headers: { "X-Auth-Token": admin, "Content-Type": "application/json" },
          body: JSON.stringify({ username: name, purpose: "internal" }),
        });
        uuid = ((await r.json()) as { uuid: string }).uuid;
      }
      spread.push(`${uuid}=${name}`);
    }
    const results: Record<string, WrkResult[]> = {
      "login on": [],
      "login off": [],
      "write on": [],
      "write off": [],
      "spread on": [],
      "spread off": [],
    };
    const loginOpts = {
      connections: 4,
      seconds,
      script: "login.lua",
      env: { BENCH_BASIC: btoa("bench:bench-password") },
    };
    const writeOpts = {
      connections: 4,
      seconds,
      script: "put-user.lua",
      env: {
        BENCH_TOKEN: admin,
        BENCH_BODY: JSON.stringify({ username: "bench", firstname: "Bench", purpose: "internal" }),
      },
    };
    const spreadOpts = {
      connections: 4,
      seconds,
      script: "put-users.lua",
      env: { BENCH_TOKEN: admin, BENCH_USERS: spread.join(",") },
    };
    for (let round = 0; round < ROUNDS; round++) {
      for (const on of round % 2 ? [false, true] : [true, false]) {
        await recording(db.url, on);
        const state = on ? "on" : "off";
        results[`login ${state}`]!.push(await measure(`${t.base}/token`, loginOpts));
        results[`write ${state}`]!.push(await measure(`${t.base}/users/${bench.uuid}`, writeOpts));
        results[`spread ${state}`]!.push(await measure(`${t.base}/users`, spreadOpts));
        const last = (k: string) => fmt(results[`${k} ${state}`]!.at(-1)!.rps);
        console.error(
          `  round ${round + 1}, ${state}: login ${last("login")}/s, same user ${last("write")}/s, 200 users ${last("spread")}/s`,
        );
      }
    }
    await recording(db.url, true);
    const med = (k: string, f: (r: WrkResult) => number) => median(results[k]!.map(f));
    for (const [kind, label] of [
      ["login", "`POST /0.1/token` (4 conns, pbkdf2_sha512)"],
      ["write", "`PUT /0.1/users/{u}`, the same user from 4 conns"],
      ["spread", "`PUT /0.1/users/{u}`, 200 users in turn, 4 conns"],
    ] as const) {
      const on = med(`${kind} on`, (r) => r.rps);
      const off = med(`${kind} off`, (r) => r.rps);
      rows.push({
        figure: `${label}, PostgreSQL, ${ROWS.toLocaleString("en")} audit entries: recorded vs insert neutralised`,
        value: `${fmt(on)}/s (p50 ${fmt(med(`${kind} on`, (r) => r.p50))} ms) vs ${fmt(off)}/s (p50 ${fmt(med(`${kind} off`, (r) => r.p50))} ms): ${fmt(((on - off) / off) * 100)} %`,
        goal: "moves < 5 %",
      });
      console.error(rows.at(-1));
    }
  } finally {
    await t.stop();
  }
  return rows;
}

if (import.meta.main) {
  const rows = await auditSection(Number(process.env.BENCH_SECONDS ?? 10));
  console.log(`| figure | measured (under load: ${root}) | goal |\n|---|---|---|`);
  for (const r of rows) console.log(`| ${r.figure} | ${r.value} | ${r.goal} |`);
}
