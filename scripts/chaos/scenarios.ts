// The chaos scenarios: each starts the service, breaks one thing, and says what the service did
// (scripts/chaos.ts runs them and prints the table).
import { join } from "node:path";
import { AMQP_URL } from "../../tests/helpers/amqp.ts";
import { basicAuth, childPids, running, spawnService } from "../../tests/helpers/service-process.ts";
import { tcpProxy } from "../../tests/helpers/tcp-proxy.ts";
import {
  adminToken,
  BASE_CONFIG,
  bootstrap,
  cleanups,
  cluster,
  missingUsers,
  ms,
  scenarioDir,
  started,
  writeUntil,
  type Outcome,
} from "./kit.ts";

/** Name, what is expected, and the run; a scenario needing a private PostgreSQL cluster says so. */
export interface Scenario {
  name: string;
  expected: string;
  needsCluster: boolean;
  run(): Promise<Outcome>;
}

export const scenarios: Scenario[] = [
  {
    name: "kill -9 (PGlite)",
    expected: "0 acknowledged writes lost",
    needsCluster: false,
    async run() {
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
  },
  {
    name: "kill -9 primary (workers: 2)",
    expected: "workers gone < 5 s, new primary serves, 0 writes lost",
    needsCluster: true,
    async run() {
      const c = await cluster();
      const dir = scenarioDir("kill-primary");
      const config = `db_uri: "${c.url}"\nworkers: 2`;
      const first = await started(dir, config);
      const workers = childPids(first.proc.pid);
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
      return {
        observed: `${workers.length} workers gone in ${goneMs} ms (${orphans} left); ${acked.length} acknowledged, ${lost} lost`,
        ok: workers.length === 2 && orphans === 0 && goneMs < 5000 && lost === 0,
      };
    },
  },
  {
    name: "outage (PostgreSQL stopped)",
    expected: "logins 503 (never 401) in ms; back < 5 s",
    needsCluster: true,
    async run() {
      const c = await cluster();
      const service = await started(scenarioDir("outage"), `db_uri: "${c.url}"\ndb_timeout: 2`);
      const login = async () => {
        const t = performance.now();
        const r = await fetch(`${service.base}/token`, {
          method: "POST",
          headers: basicAuth("admin", "s3cret"),
          body: "{}",
        });
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
      const later = answers
        .slice(answers.length >> 1)
        .map((a) => a.ms)
        .sort((x, y) => x - y);
      const median = later[later.length >> 1] ?? Infinity;
      const statuses = [...new Set(answers.map((a) => a.status))].join("/");
      return {
        observed: `${answers.length} logins answered ${statuses}, median ${median.toFixed(1)} ms; 200 again after ${backMs} ms`,
        ok: statuses === "503" && median < 100 && backMs < 5000,
      };
    },
  },
  {
    name: "freeze (PostgreSQL SIGSTOP)",
    expected: "503 within db_timeout; SIGTERM exit < db_timeout + 5 s",
    needsCluster: true,
    async run() {
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
        return {
          observed: `GET /users ${r.status} in ${answerMs} ms; SIGTERM: exit ${code} after ${exitMs} ms`,
          ok: r.status === 503 && answerMs < 2500 && code !== null && exitMs < 8000,
        };
      } finally {
        c.thaw();
      }
    },
  },
  {
    name: "partition (link to PostgreSQL drops all)",
    expected: "cached token refused (503) < db_timeout + 2 s, served again after",
    needsCluster: true,
    async run() {
      const c = await cluster();
      const proxy = tcpProxy("127.0.0.1", c.port);
      cleanups.push(() => proxy.close());
      const service = await started(
        scenarioDir("partition"),
        `db_uri: "postgres://postgres@127.0.0.1:${proxy.port}/postgres"\ndb_timeout: 1`,
      );
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
      return {
        observed: `${before} → ${during} after ${refusedMs} ms → ${after} ${ms(healed)} ms after healing`,
        ok: before === 204 && during === 503 && refusedMs < 3000 && after === 204,
      };
    },
  },
  {
    name: "broker cut (proxy to RabbitMQ)",
    expected: "writes succeed, status fail, backlog drains",
    needsCluster: false,
    async run() {
      const target = new URL(AMQP_URL);
      const proxy = tcpProxy(target.hostname, Number(target.port || 5672));
      cleanups.push(() => proxy.close());
      const dir = scenarioDir("broker");
      bootstrap({ TESSERA_DATA_DIR: join(dir, "data") });
      const uri = `amqp://${target.username}:${target.password}@127.0.0.1:${proxy.port}${target.pathname}`;
      const service = await started(
        dir,
        `amqp: {uri: "${uri}", exchange_name: "tessera-chaos-${process.pid}", exchange_type: topic}`,
      );
      const token = await adminToken(service.base);
      const bus = async () =>
        (
          (await (await fetch(`${service.base}/status`, { headers: { "X-Auth-Token": token } })).json()) as {
            bus_publisher: { status: string; outbox_backlog: number };
          }
        ).bus_publisher;
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
        ok:
          acked.length > 0 &&
          during.status === "fail" &&
          during.outbox_backlog > 0 &&
          after.status === "ok" &&
          after.outbox_backlog === 0,
      };
    },
  },
  {
    name: "full disk (PGlite on a 2 MB tmpfs)",
    expected: "start-up fails (exit 1) naming ENOSPC",
    needsCluster: false,
    async run() {
      const mountPoint = scenarioDir("disk");
      if (
        process.getuid?.() !== 0 ||
        Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mountPoint]).exitCode !== 0
      ) {
        return { observed: "cannot mount a tmpfs (not root?)", ok: "skipped" };
      }
      cleanups.push(() => void Bun.spawnSync(["umount", "-l", mountPoint]));
      const service = spawnService(mountPoint, BASE_CONFIG);
      const code = await service.exitWithin(90_000);
      const line = service
        .log()
        .split("\n")
        .find((l) => l.includes("cannot open the database"));
      const cause = line ? (JSON.parse(line) as { code: string | null }).code : null;
      return { observed: `exit ${code}, cause ${cause}`, ok: code === 1 && cause === "ENOSPC" };
    },
  },
];
