// The platform-operator data set (issue 29): 100,000 tenants in a tree six levels deep, 1,000,000
// users with an email each, 10,000 groups, 100,000 policies, 1,000,000 live and 1,000,000 expired
// tokens (each with its session), loaded through the real tables, indexes and triggers with big
// `insert … select from generate_series` batches (one round trip per batch, no rows through the
// client). `--scale 0.1` loads a tenth of everything.
//
//   npx bun bench/seed-scale.ts [--scale 1] [--database tessera_scale] [--fresh]   # PostgreSQL
//   npx bun bench/seed-scale.ts --pglite DIR [--scale 0.05]                        # embedded
//
// PostgreSQL: the database is created on the server of BENCH_DATABASE_URL (default the local one);
// never `postgres`, `test` or a template. `--fresh` drops it first; without it an existing database
// is refused. Identifiers are derived from the row number (`md5('t' || i)::uuid`), so the bench
// finds a tenant at a given depth, or a live token, without asking.
//
// The tree: tenant i's parent is tenant ⌊(i − 1) / 7⌋ (0 is the master tenant), so tenants 1–7 are
// at depth 1 and 19,608–100,000 at depth 6; tenant 1 heads a subtree of 19,608. User j lives in
// tenant ((j − 1) mod tenants) + 1; admin / admin-password (ACL `#`) in the master tenant.
import { sql } from "drizzle-orm";
import { parseConfig } from "../src/config/config.ts";
import { execRows, openDatabase, type DbOrTx } from "../src/db/index.ts";
import { silentLogger } from "../src/observe/log.ts";
import { buildContext, closeContext } from "../src/services/app-context.ts";
import { bootstrapUser } from "../src/services/identity/bootstrap.ts";
import { PG_URL } from "./lib.ts";

export interface ScaleCounts {
  tenants: number;
  users: number;
  groups: number;
  policies: number;
  liveTokens: number;
  expiredTokens: number;
}

export const FULL: ScaleCounts = {
  tenants: 100_000,
  users: 1_000_000,
  groups: 10_000,
  policies: 100_000,
  liveTokens: 1_000_000,
  expiredTokens: 1_000_000,
};
export const BRANCHING = 7;

export function countsAt(scale: number): ScaleCounts {
  const out = {} as ScaleCounts;
  for (const [k, v] of Object.entries(FULL)) out[k as keyof ScaleCounts] = Math.max(1, Math.round(v * scale));
  return out;
}

/** SQL text of tenant `i`'s uuid (i an SQL expression), and the same in JavaScript. */
const tenantId = (i: string) => `md5('t' || (${i}))::uuid::text`;
export const userId = (prefix: string, i: number) => md5Uuid(`${prefix}${i}`);
function md5Uuid(text: string): string {
  const h = new Bun.CryptoHasher("md5").update(text).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
export const tenantUuid = (i: number) => md5Uuid(`t${i}`);

/** The depth of tenant i in the tree (1 for tenants 1–7). */
export function depthOf(i: number): number {
  let depth = 0;
  for (let n = i; n > 0; n = Math.floor((n - 1) / BRANCHING)) depth++;
  return depth;
}

/** Tenant i with its descendants, among `tenants` (children of i are 7i + 1 … 7i + 7). */
export function subtreeSize(i: number, tenants: number): number {
  let size = 0;
  for (let [a, b] = [i, i]; a <= tenants; [a, b] = [BRANCHING * a + 1, BRANCHING * b + BRANCHING])
    size += Math.min(b, tenants) - a + 1;
  return size;
}

/** A progress bar on a terminal, a line per step elsewhere. */
class Progress {
  private started = performance.now();
  private stepStarted = performance.now();
  constructor(private readonly out = process.stderr) {}
  update(step: string, done: number, total: number): void {
    if (!this.out.isTTY) return;
    const width = 30;
    const filled = Math.round((done / total) * width);
    const s = ((performance.now() - this.started) / 1000).toFixed(0);
    this.out.write(
      `\r[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${step} ${done.toLocaleString("en")}/${total.toLocaleString("en")} · ${s} s   `,
    );
  }
  done(step: string, total: number): void {
    const ms = performance.now() - this.stepStarted;
    this.stepStarted = performance.now();
    const line = `${step}: ${total.toLocaleString("en")} rows in ${(ms / 1000).toFixed(1)} s`;
    this.out.write(this.out.isTTY ? `\r${line}${" ".repeat(40)}\n` : `${line}\n`);
  }
  get seconds(): number {
    return (performance.now() - this.started) / 1000;
  }
}

/** Runs `insert(from, to)` over 1..total in batches, with progress. */
async function batched(
  progress: Progress,
  step: string,
  total: number,
  batch: number,
  insert: (from: number, to: number) => Promise<unknown>,
): Promise<void> {
  for (let from = 1; from <= total; from += batch) {
    const to = Math.min(total, from + batch - 1);
    await insert(from, to);
    progress.update(step, to, total);
  }
  progress.done(step, total);
}

const FIRST = `array['Alice','Bruno','Chloé','David','Emma','Farid','Gabriel','Hugo','Inès','Jules','Karim','Léa','Manon','Nathan','Olivia','Paul','Quentin','Rose','Samuel','Théo','Ulysse','Victor','Wassim','Xavier','Yasmine','Zoé']`;
const SYL = `array['mar','tin','ber','nard','du','bois','lau','rent','si','mon','mi','chel','le','fe','vre','ro','bert','ri','chard','pe','tit','ga','ran','mo','rel']`;
const END = `array['eau','and','ier','ot','in','et','on','y','ez','ard']`;

/** Loads the data set into a migrated, empty Tessera database. */
export async function loadScale(
  db: DbOrTx,
  top: string,
  c: ScaleCounts,
  xivoUuid: string,
  progress = new Progress(),
): Promise<void> {
  const run = (text: string) => execRows(db, sql.raw(text));
  const parent = (i: string) =>
    `case when (${i} - 1) / ${BRANCHING} = 0 then '${top}' else ${tenantId(`(${i} - 1) / ${BRANCHING}`)} end`;
  const tenantOfUser = (j: string) => `((${j} - 1) % ${c.tenants}) + 1`;
  // Tenants with their all-users group, as tenant creation makes them.
  await batched(progress, "tenants", c.tenants, 20_000, async (a, b) => {
    await run(`insert into auth_tenant (uuid, name, slug, parent_uuid)
      select ${tenantId("i")}, 'Tenant ' || i, 't' || i, ${parent("i")} from generate_series(${a}, ${b}) i`);
    await run(`insert into auth_group (name, slug, tenant_uuid, system_managed)
      select 'wazo-all-users-tenant-' || ${tenantId("i")}, 'wazo-all-users-tenant-' || ${tenantId("i")}, ${tenantId("i")}, true from generate_series(${a}, ${b}) i`);
  });
  await run(
    `insert into auth_access (access) select 'confd.users.' || k || '.read' from generate_series(1, 1000) k on conflict do nothing`,
  );
  await batched(progress, "policies (3 ACL entries each)", c.policies, 20_000, async (a, b) => {
    await run(`insert into auth_policy (uuid, name, slug, tenant_uuid)
      select md5('p' || i)::uuid::text, 'policy' || i, 'policy' || i, ${tenantId(`((i - 1) % ${c.tenants}) + 1`)} from generate_series(${a}, ${b}) i`);
    await run(`insert into auth_policy_access (policy_uuid, access_id)
      select md5('p' || i)::uuid::text, a.id from generate_series(${a}, ${b}) i
      join auth_access a on a.access in ('confd.users.' || (i % 1000 + 1) || '.read', 'confd.users.' || ((i + 1) % 1000 + 1) || '.read', 'confd.users.' || ((i + 2) % 1000 + 1) || '.read')`);
  });
  await batched(progress, "users with an email", c.users, 25_000, async (a, b) => {
    await run(`with new_users as (
        insert into auth_user (uuid, username, firstname, lastname, tenant_uuid, purpose)
        select md5('u' || i)::uuid::text, 'user' || i, (${FIRST})[1 + (i * 7) % 26],
               initcap((${SYL})[1 + (i * 13) % 25] || (${SYL})[1 + (i / 25) % 25] || (${END})[1 + (i / 625) % 10]),
               ${tenantId(tenantOfUser("i"))}, 'user'
        from generate_series(${a}, ${b}) i
        returning uuid, username)
      insert into auth_email (uuid, address, confirmed, main, user_uuid)
      select gen_random_uuid()::text, username || '@example.com', true, true, uuid from new_users`);
  });
  // Groups in the first tenants (one per tenant while there are fewer groups), ten members each.
  await batched(progress, "groups (ten members each)", c.groups, 10_000, async (a, b) => {
    await run(`insert into auth_group (uuid, name, slug, tenant_uuid)
      select md5('g' || i)::uuid::text, 'group' || i, 'group' || i, ${tenantId(`((i - 1) % ${c.tenants}) + 1`)} from generate_series(${a}, ${b}) i`);
    await run(`insert into auth_user_group (user_uuid, group_uuid)
      select md5('u' || (((i - 1) % ${c.tenants}) + 1 + k * ${c.tenants}))::uuid::text, md5('g' || i)::uuid::text
      from generate_series(${a}, ${b}) i, generate_series(0, 9) k where ((i - 1) % ${c.tenants}) + 1 + k * ${c.tenants} <= ${c.users}`);
  });
  const now = Math.floor(Date.now() / 1000);
  const tokens = (kind: "live" | "expired", count: number) =>
    batched(progress, `${kind} tokens with their session`, count, 25_000, async (a, b) => {
      const k = kind === "live" ? "l" : "x";
      const user = (i: string) => `(((${i}) - 1) % ${c.users}) + 1`;
      await run(`insert into auth_session (uuid, tenant_uuid)
        select md5('s${k}' || i)::uuid::text, ${tenantId(tenantOfUser(user("i")))} from generate_series(${a}, ${b}) i`);
      const [issued, expires] = kind === "live" ? [now - 600, now + 10 * 86400] : [now - 2 * 86400, now - 3600 - 0];
      await run(`insert into auth_token (uuid, auth_id, pbx_user_uuid, xivo_uuid, issued_t, expire_t, metadata, user_agent, remote_addr, acl, session_uuid)
        select md5('${k}' || i)::uuid::text, md5('u' || ${user("i")})::uuid::text, md5('u' || ${user("i")})::uuid::text, '${xivoUuid}', ${issued}, ${expires} - (i % 3600),
          json_build_object('uuid', md5('u' || ${user("i")})::uuid::text, 'tenant_uuid', ${tenantId(tenantOfUser(user("i")))}, 'auth_id', md5('u' || ${user("i")})::uuid::text, 'purpose', 'user')::text,
          'seed-scale', '127.0.0.1', array['confd.users.me.read'], md5('s${k}' || i)::uuid::text
        from generate_series(${a}, ${b}) i`);
    });
  await tokens("live", c.liveTokens);
  await tokens("expired", c.expiredTokens);
  // What autovacuum would have done by the time such a database is in use: statistics, and the
  // trigram indexes' pending entries merged.
  const t = performance.now();
  await run("vacuum analyze");
  process.stderr.write(`vacuum analyze: ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
}

/** Creates (or, with `fresh`, recreates) the database `name` on the benchmark's server: its URL. */
export async function createScaleDatabase(name: string, fresh: boolean): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name) || ["postgres", "test"].includes(name) || name.startsWith("template")) {
    throw new Error(`refusing to load into the database "${name}": give a name of its own (--database)`);
  }
  const { default: postgres } = await import("postgres");
  const admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
  try {
    const [exists] = await admin`select 1 from pg_database where datname = ${name}`;
    if (exists && !fresh) throw new Error(`the database "${name}" exists: add --fresh to drop and reload it`);
    if (exists) await admin.unsafe(`drop database "${name}" with (force)`);
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Seeds a fresh database (migrations first, as the service runs them), then the admin user. */
export async function seedScale(target: { url: string } | { dataDir: string }, counts: ScaleCounts): Promise<number> {
  const progress = new Progress();
  const config = parseConfig({
    ...("url" in target ? { db_uri: target.url } : { data_dir: target.dataDir }),
    password_hash_iterations: 1000,
  });
  const database = await openDatabase({ url: config.db_uri, dataDir: config.data_dir, timeoutSeconds: 600 });
  const app = await buildContext(config, database, silentLogger);
  try {
    await bootstrapUser(app, "admin", "admin-password");
    await loadScale(app.db, app.topTenantUuid, counts, app.xivoUuid ?? "", progress);
  } finally {
    await closeContext(app);
  }
  return progress.seconds;
}

if (import.meta.main) {
  const scale = Number(arg("scale") ?? (arg("pglite") ? 0.05 : 1));
  const counts = countsAt(scale);
  const dir = arg("pglite");
  const target = dir
    ? { dataDir: dir }
    : { url: await createScaleDatabase(arg("database") ?? "tessera_scale", process.argv.includes("--fresh")) };
  process.stderr.write(
    `loading ${JSON.stringify(counts)} into ${dir ? `PGlite at ${dir}` : (target as { url: string }).url}\n`,
  );
  const seconds = await seedScale(target, counts);
  process.stderr.write(`loaded in ${seconds.toFixed(0)} s\n`);
}
