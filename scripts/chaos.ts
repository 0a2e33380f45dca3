// `npm run chaos`: the reliability checks of issue 23 run against a started service (src/main.ts,
// a real process), each breaking one thing and reporting what the service did, in one table:
//
//   kill -9 (PGlite)        writes in flight, kill -9, restart: every acknowledged write is there
//   kill -9 primary         workers: 2, writes in flight, kill -9 of the primary: its workers stop
//                           at once, a new primary serves, every acknowledged write is there
//   outage                  PostgreSQL stopped: logins answer 503 (never 401) in milliseconds, and
//                           succeed again soon after it is back
//   freeze                  PostgreSQL SIGSTOPped: requests answer 503 within db_timeout; SIGTERM
//                           exits within db_timeout + 5 s
//   partition               the link to PostgreSQL silently drops everything (a frozen TCP proxy):
//                           a cached token is refused (503) once the heartbeat misses, served after
//   broker cut              the link to RabbitMQ cut (a TCP proxy): requests still succeed, status
//                           says fail, the backlog drains once the link is back
//   full disk               PGlite on a 2 MB tmpfs (root only): start-up fails, naming ENOSPC
//
// Everything stays on loopback and is private to the run: a PostgreSQL cluster of its own
// (tests/helpers/pg-cluster.ts), TCP proxies, temporary directories; the shared PostgreSQL is never
// touched and the shared RabbitMQ only through a proxy. Each scenario is bounded (SCENARIO_SECONDS);
// the whole run takes two to four minutes. Not part of `npm test` (time), exit 1 if any check fails.
import Table from "cli-table3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AMQP_URL } from "../tests/helpers/amqp.ts";
import { pgClusterAvailable, startPgCluster, type PgCluster } from "../tests/helpers/pg-cluster.ts";
import { basicAuth, spawnService, waitForService, type ServiceProcess } from "../tests/helpers/service-process.ts";
import { tcpProxy } from "../tests/helpers/tcp-proxy.ts";

const SCENARIO_SECONDS = 120;
const root = join(import.meta.dir, "..");
const BASE_CONFIG = "password_hash_iterations: 1000\nargon2: {memory_kib: 256, time_cost: 1}\nshutdown_drain_seconds: 0\ntoken_cleanup_interval: 0";

interface Outcome {
  /** What the service did, in a few words with figures. */
  observed: string;
  ok: boolean | "skipped";
}

/** The private resources of a run, closed at its end. */
const cleanups: Array<() => Promise<void> | void> = [];
const workDir = mkdtempSync(join(tmpdir(), "tessera-chaos-"));
cleanups.push(() => rmSync(workDir, { recursive: true, force: true }));

let clusterPromise: Promise<PgCluster> | null = null;
function cluster(): Promise<PgCluster> {
  clusterPromise ??= startPgCluster().then((c) => {
    cleanups.push(() => c.destroy());
    bootstrap({ DATABASE_URL: c.url });
    return c;
  });
  return clusterPromise;
}

function scenarioDir(name: string): string {
  return mkdtempSync(join(workDir, `${name}-`));
}

function bootstrap(env: Record<string, string>): void {
  const r = Bun.spawnSync([process.execPath, "src/cli.ts", "bootstrap", "admin", "s3cret"], { cwd: root, env: { ...process.env, TESSERA_CONFIG: "", ...env } });
  if (r.exitCode !== 0) throw new Error(`bootstrap failed: ${r.stderr.toString().slice(0, 300)}`);
}

async function started(dir: string, config: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const service = spawnService(dir, `${BASE_CONFIG}\n${config}`, env);
  cleanups.push(() => void service.proc.kill("SIGKILL"));
  if (!(await waitForService(service.base, 60))) throw new Error(`the service did not start: ${service.log().slice(-400)}`);
  return service;
}

async function adminToken(base: string): Promise<string> {
  const r = await fetch(`${base}/token`, { method: "POST", headers: basicAuth("admin", "s3cret"), body: "{}" });
  if (r.status !== 200) throw new Error(`admin login answered ${r.status}`);
  return ((await r.json()) as { data: { token: string } }).data.token;
}

/** Creates users four at a time until `stop()`; the usernames whose creation was acknowledged. */
async function writeUntil(base: string, token: string, stop: () => boolean): Promise<string[]> {
  const acked: string[] = [];
  const writer = async () => {
    while (!stop()) {
      const username = `chaos-${crypto.randomUUID().slice(0, 12)}`;
      try {
        const r = await fetch(`${base}/users`, { method: "POST", headers: { "X-Auth-Token": token, "Content-Type": "application/json" }, body: JSON.stringify({ username }) });
        if (r.status === 200) acked.push(username);
        await r.arrayBuffer();
      } catch {
        return; // the connection died with the process
      }
    }
  };
  await Promise.all([writer(), writer(), writer(), writer()]);
  return acked;
}

async function missingUsers(base: string, token: string, usernames: string[]): Promise<number> {
  let missing = 0;
  for (const username of usernames) {
    const r = await fetch(`${base}/users?username=${username}`, { headers: { "X-Auth-Token": token } });
    const body = (await r.json()) as { items?: unknown[] };
    if (r.status !== 200 || body.items?.length !== 1) missing++;
  }
  return missing;
}

function childrenOf(pid: number): number[] {
  try {
    return require("node:fs").readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(require("node:fs").readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

const ms = (since: number) => Math.round(performance.now() - since);

const scenarios: Array<[string, string, () => Promise<Outcome>]> = [
  [
    "kill -9 (PGlite)",
    "0 acknowledged writes lost",
    async () => {
      const dir = scenarioDir("kill-pglite");
      bootstrap({ TESSERA_DATA_DIR: join(dir, "data") });
      let service = await started(dir, "");
      const token = await adminToken(service.base);
      let stop = false;
      const writing = writeUntil(service.base, token, () => stop);
      await Bun.sleep(1500);
      service.proc.kill("SIGKILL");
      await service.proc.exited;
      stop = true;
      const acked = await writing;
      service = await started(dir, "");
      const lost = await missingUsers(service.base, await adminToken(service.base), acked);
      service.proc.kill("SIGTERM");
      await service.exitWithin(20_000);
      return { observed: `${acked.length} acknowledged, ${lost} lost`, ok: lost === 0 && acked.length > 0 };
    },
  ],
  [
    "kill -9 primary (workers: 2)",
    "workers gone < 5 s, new primary serves, 0 writes lost",
    async () => {
      const c = await cluster();
      const dir = scenarioDir("kill-primary");
      const config = `db_uri: "${c.url}"\nworkers: 2`;
      const first = await started(dir, config);
      const workers = childrenOf(first.proc.pid);
      const token = await adminToken(first.base);
      let stop = false;
      const writing = writeUntil(first.base, token, () => stop);
      await Bun.sleep(1500);
      first.proc.kill("SIGKILL");
      const killed = performance.now();
      while (workers.some(running) && ms(killed) < 10_000) await Bun.sleep(20);
      const goneMs = ms(killed);
      stop = true;
      const acked = await writing;
      const second = await started(dir, config);
      const lost = await missingUsers(second.base, await adminToken(second.base), acked);
      second.proc.kill("SIGTERM");
      await second.exitWithin(20_000);
      const orphans = workers.filter(running).length;
      return { observed: `${workers.length} workers gone in ${goneMs} ms (${orphans} left); ${acked.length} acknowledged, ${lost} lost`, ok: workers.length === 2 && orphans === 0 && goneMs < 5000 && lost === 0 };
    },
  ],
  [
    "outage (PostgreSQL stopped)",
    "logins 503 (never 401) in ms; back < 5 s",
    async () => {
      const c = await cluster();
      const service = await started(scenarioDir("outage"), `db_uri: "${c.url}"\ndb_timeout: 2`);
      const login = async () => {
        const t = performance.now();
        const r = await fetch(`${service.base}/token`, { method: "POST", headers: basicAuth("admin", "s3cret"), body: "{}" });
        await r.arrayBuffer();
        return { status: r.status, ms: performance.now() - t };
      };
      await c.stop();
      const answers = [];
      try {
        for (const end = performance.now() + 5000; performance.now() < end; ) answers.push(await login());
      } finally {
        await c.start();
      }
      const back = performance.now();
      while ((await login()).status !== 200 && ms(back) < 30_000) await Bun.sleep(50);
      const backMs = ms(back);
      service.proc.kill("SIGTERM");
      await service.exitWithin(20_000);
      const later = answers.slice(answers.length >> 1).map((a) => a.ms).sort((x, y) => x - y);
      const median = later[later.length >> 1] ?? Infinity;
      const statuses = [...new Set(answers.map((a) => a.status))].join("/");
      return { observed: `${answers.length} logins answered ${statuses}, median ${median.toFixed(1)} ms; 200 again after ${backMs} ms`, ok: statuses === "503" && median < 100 && backMs < 5000 };
    },
  ],
  [
    "freeze (PostgreSQL SIGSTOP)",
    "503 within db_timeout; SIGTERM exit < db_timeout + 5 s",
    async () => {
      const c = await cluster();
      const service = await started(scenarioDir("freeze"), `db_uri: "${c.url}"\ndb_timeout: 1`);
      const token = await adminToken(service.base);
      c.freeze();
      try {
        const t = performance.now();
        const r = await fetch(`${service.base}/users`, { headers: { "X-Auth-Token": token } });
        await r.arrayBuffer();
        const answerMs = ms(t);
        const s = performance.now();
        service.proc.kill("SIGTERM");
        const code = await service.exitWithin(30_000);
        const exitMs = ms(s);
        return { observed: `GET /users ${r.status} in ${answerMs} ms; SIGTERM: exit ${code} after ${exitMs} ms`, ok: r.status === 503 && answerMs < 2500 && code !== null && exitMs < 8000 };
      } finally {
        c.thaw();
      }
    },
  ],
  [
    "partition (link to PostgreSQL drops all)",
    "cached token refused (503) < db_timeout + 2 s, served again after",
    async () => {
      const c = await cluster();
      const proxy = tcpProxy("127.0.0.1", c.port);
      cleanups.push(() => proxy.close());
      const service = await started(scenarioDir("partition"), `db_uri: "postgres://postgres@127.0.0.1:${proxy.port}/postgres"\ndb_timeout: 1`);
      const token = await adminToken(service.base);
      const check = async () => (await fetch(`${service.base}/token/${token}`, { method: "HEAD" })).status;
      const before = await check();
      proxy.freeze();
      const t = performance.now();
      let during = before;
      try {
        while (during !== 503 && ms(t) < 10_000) {
          during = await check();
          await Bun.sleep(20);
        }
      } finally {
        proxy.restore();
      }
      const refusedMs = ms(t);
      const healed = performance.now();
      let after = during;
      while (after !== 204 && ms(healed) < 30_000) {
        after = await check().catch(() => 0);
        await Bun.sleep(50);
      }
      service.proc.kill("SIGTERM");
      await service.exitWithin(20_000);
      return { observed: `${before} → ${during} after ${refusedMs} ms → ${after} ${ms(healed)} ms after healing`, ok: before === 204 && during === 503 && refusedMs < 3000 && after === 204 };
    },
  ],
  [
    "broker cut (proxy to RabbitMQ)",
    "writes succeed, status fail, backlog drains",
    async () => {
      const target = new URL(AMQP_URL);
      const proxy = tcpProxy(target.hostname, Number(target.port || 5672));
      cleanups.push(() => proxy.close());
      const dir = scenarioDir("broker");
      bootstrap({ TESSERA_DATA_DIR: join(dir, "data") });
      const uri = `amqp://${target.username}:${target.password}@127.0.0.1:${proxy.port}${target.pathname}`;
      const service = await started(dir, `amqp: {uri: "${uri}", exchange_name: "tessera-chaos-${process.pid}", exchange_type: topic}`);
      const token = await adminToken(service.base);
      const bus = async () => ((await (await fetch(`${service.base}/status`, { headers: { "X-Auth-Token": token } })).json()) as { bus_publisher: { status: string; outbox_backlog: number } }).bus_publisher;
      const t = performance.now();
      while ((await bus()).status !== "ok" && ms(t) < 15_000) await Bun.sleep(100);
      proxy.cut();
      await Bun.sleep(300);
      let stop = false;
      const writing = writeUntil(service.base, token, () => stop);
      await Bun.sleep(1000);
      stop = true;
      const acked = await writing;
      const during = await bus();
      proxy.restore();
      const restored = performance.now();
      let after = await bus();
      while ((after.status !== "ok" || after.outbox_backlog > 0) && ms(restored) < 60_000) {
        await Bun.sleep(200);
        after = await bus();
      }
      service.proc.kill("SIGTERM");
      await service.exitWithin(20_000);
      return {
        observed: `${acked.length} writes acknowledged during the cut; status ${during.status}, backlog ${during.outbox_backlog}; ${after.status}, backlog ${after.outbox_backlog} ${ms(restored)} ms after restoring`,
        ok: acked.length > 0 && during.status === "fail" && during.outbox_backlog > 0 && after.status === "ok" && after.outbox_backlog === 0,
      };
    },
  ],
  [
    "full disk (PGlite on a 2 MB tmpfs)",
    "start-up fails (exit 1) naming ENOSPC",
    async () => {
      const mountPoint = scenarioDir("disk");
      if (process.getuid?.() !== 0 || Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mountPoint]).exitCode !== 0) {
        return { observed: "cannot mount a tmpfs (not root?)", ok: "skipped" };
      }
      cleanups.push(() => void Bun.spawnSync(["umount", "-l", mountPoint]));
      const service = spawnService(mountPoint, BASE_CONFIG);
      const code = await service.exitWithin(90_000);
      const line = service.log().split("\n").find((l) => l.includes("cannot open the database"));
      const cause = line ? (JSON.parse(line) as { code: string | null }).code : null;
      return { observed: `exit ${code}, cause ${cause}`, ok: code === 1 && cause === "ENOSPC" };
    },
  ],
];

async function bounded(run: () => Promise<Outcome>): Promise<Outcome & { seconds: number }> {
  const t = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<Outcome>((resolve) => (timer = setTimeout(() => resolve({ observed: `no outcome within ${SCENARIO_SECONDS} s`, ok: false }), SCENARIO_SECONDS * 1000)));
  const outcome = await Promise.race([run().catch((e) => ({ observed: `error: ${(e as Error).message}`.slice(0, 300), ok: false })), late]);
  clearTimeout(timer);
  return { ...outcome, seconds: (performance.now() - t) / 1000 };
}

const only = process.argv.slice(2).join(" ").toLowerCase();
const table = new Table({ head: ["scenario", "expected", "observed", "result", "s"], colWidths: [24, 30, 60, 9, 6], wordWrap: true, style: { head: [], border: [] } });
let failed = 0;
try {
  for (const [name, expected, run] of scenarios) {
    if (only && !name.toLowerCase().includes(only)) continue;
    const needsCluster = run.toString().includes("cluster()");
    const outcome: Outcome & { seconds: number } =
      needsCluster && !pgClusterAvailable ? { observed: "PostgreSQL binaries or the postgres user missing", ok: "skipped", seconds: 0 } : await bounded(run);
    if (outcome.ok === false) failed++;
    console.error(`${name}: ${outcome.ok === "skipped" ? "skipped" : outcome.ok ? "ok" : "FAILED"} — ${outcome.observed}`);
    table.push([name, expected, outcome.observed, outcome.ok === "skipped" ? "skipped" : outcome.ok ? "ok" : "FAILED", outcome.seconds.toFixed(0)]);
  }
} finally {
  for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => {});
}
console.log(table.toString());
process.exit(failed > 0 ? 1 : 0);
