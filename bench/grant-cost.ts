// `bun bench/grant-cost.ts [pglite|postgres]`: the client credentials grant's own cost, in process,
// without HTTP: `GRANTS` grants (default 3,000, after 300 to warm up), `BENCH_CONCURRENCY` in flight
// (default 16), through the grant's service as the token endpoint calls it (the client from memory,
// its one statement, audit entry included). Prints grants/s and the process's CPU time per grant
// (every thread: on PGlite the database thread's share is in it), split by thread, the PostgreSQL
// backends' CPU per grant (read from /proc: the server runs on this machine) and the statements sent
// per grant (db/bound-inserts.ts counts them; absent from older checkouts). On a shared machine run it for two
// checkouts in alternation (`cd other && bun bench/grant-cost.ts`), several times, and compare.
import { sql } from "drizzle-orm";
import { parseConfig } from "../src/config/config.ts";
import { buildContext, closeContext } from "../src/services/app-context.ts";
import { startServices } from "../src/boot/startup.ts";
import { findClient, createClient } from "../src/services/oidc/clients.ts";
import { clientCredentialsToken } from "../src/services/oidc/grants/client-credentials.ts";
import { openDatabase } from "../src/db/index.ts";
import { silentLogger } from "../src/observe/log.ts";
import { readdirSync, readFileSync } from "node:fs";
import { scratchDatabase } from "./lib.ts";
import type { Caller } from "../src/domain/caller.ts";

const kind = process.argv[2] === "postgres" ? "postgres" : "pglite";
const GRANTS = Number(process.env.GRANTS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);

const scratch = kind === "postgres" ? await scratchDatabase() : null;
if (kind === "postgres" && !scratch) throw new Error("PostgreSQL unreachable (BENCH_DATABASE_URL)");
const database = await openDatabase(scratch ? { url: scratch.url, poolSize: 16 } : { dataDir: "memory://" });
const app = await buildContext(parseConfig({ token_cleanup_interval: 0 }), database, silentLogger);
await startServices(app);
const admin = {
  token: { uuid: crypto.randomUUID(), sessionUuid: crypto.randomUUID(), authId: "bench", acl: ["#"], metadata: {} },
  userUuid: null,
  tenantUuid: app.topTenantUuid,
  ownTenantUuid: app.topTenantUuid,
} as unknown as Caller;
const made = await createClient(app, admin, {
  name: "bench",
  client_type: "confidential",
  redirect_uris: [],
  post_logout_redirect_uris: [],
  first_party: false,
  grant_types: ["client_credentials"],
  acl: ["confd.users.read"],
});
const client = (await findClient(app, made.client_id))!;
const origin = { userAgent: "bench", remoteAddr: "127.0.0.1" };

async function run(n: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next++ < n) await clientCredentialsToken(app, client, {} as never, origin as never);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

/** CPU ticks (user + system, 10 ms each) of a process or thread from /proc. */
const ticks = (path: string) => {
  try {
    const fields = readFileSync(path, "utf8").split(") ")[1]!.split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0; // gone
  }
};
/** This process's threads by name (the PGlite thread is a Worker: its own name), in ticks. */
function threadTicks(): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    const name = readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim();
    const group = tid === String(process.pid) ? "main" : /^(Worker|WebWorker|JSC Worker)/i.test(name) ? name : "other";
    byName.set(group, (byName.get(group) ?? 0) + ticks(`/proc/self/task/${tid}/stat`));
  }
  return byName;
}
/** The PostgreSQL server's backends serving this database (their CPU is the server's share of a grant). */
async function backendTicks(): Promise<number> {
  if (!scratch) return 0;
  const rows = await app.db.execute<{ pid: number }>(
    sql`select pid from pg_stat_activity where datname = current_database()`,
  );
  let sum = 0;
  for (const { pid } of rows as unknown as { pid: number }[]) sum += ticks(`/proc/${pid}/stat`);
  return sum;
}

/** Statements sent by db/bound-inserts.ts so far (null in a checkout that does not count them). */
const boundModule = (await import("../src/db/bound-inserts.ts")) as { boundStatements?: () => number };
const statements = () => boundModule.boundStatements?.() ?? null;

await run(300); // warm-up: JIT, the statement's text, the caches
const statements0 = statements();
const threads0 = threadTicks();
const backends0 = await backendTicks();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await run(GRANTS);
const seconds = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
const backends = (await backendTicks()) - backends0;
const threads = threadTicks();
const sent = statements0 === null ? null : statements()! - statements0;
const load = (await Bun.file("/proc/loadavg").text()).split(" ")[0];
const perGrant = (t: number) => Math.round((t * 10_000) / GRANTS);
const split = [...threads].map(([name, t]) => `${name} ${perGrant(t - (threads0.get(name) ?? 0))}`).join(", ");
console.log(
  `${kind}: ${Math.round(GRANTS / seconds)} grants/s, ${Math.round((cpu.user + cpu.system) / GRANTS)} µs of CPU per grant (all threads: ${split})` +
    `${scratch ? `, PostgreSQL backends ${perGrant(backends)} µs` : ""}` +
    `${sent === null ? "" : `, ${(sent / GRANTS).toFixed(3)} statements per grant`}, load ${load}`,
);
await closeContext(app);
await scratch?.drop();
