// The token check's latency while another instance purges expired tokens, with and without each
// instance relaying the outbox to RabbitMQ: which part of the purge's work disturbs the check.
// Needs a database loaded by bench/seed-scale.ts with expired tokens left (BENCH_SCALE_DATABASE,
// default tessera_scale). Each case purges for BENCH_PURGE_SECONDS (default 20).
//
//   npx bun bench/purge-impact.ts
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cpuSeconds, login, PG_URL, root, wrk, type WrkResult } from "./lib.ts";
import { tenantUuid } from "./seed-scale.ts";

const url = new URL(PG_URL);
url.pathname = `/${process.env.BENCH_SCALE_DATABASE ?? "tessera_scale"}`;
const seconds = Number(process.env.BENCH_PURGE_SECONDS ?? 20);
// With `amqp` set, an instance relays the outbox to the broker (RabbitMQ on the machine); without,
// its events stay in the outbox.
const BUS = `amqp: {uri: "${process.env.BENCH_AMQP_URI ?? "amqp://guest:guest@127.0.0.1:5672/"}"}`;
const NO_BUS = "";

async function instance(extra: string) {
  const dir = mkdtempSync(join(tmpdir(), "tessera-purge-"));
  const port = 9700 + Math.floor(Math.random() * 80);
  const config = join(dir, "config.yml");
  writeFileSync(
    config,
    `data_dir: ${join(dir, "data")}\nrest_api: {port: ${port}}\ndb_uri: "${url}"\nlog_level: error\n${extra}\n`,
  );
  const proc = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: root,
    env: { ...process.env, TESSERA_CONFIG: config },
    stdout: "ignore",
    stderr: "ignore",
  });
  const base = `http://127.0.0.1:${port}/0.1`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/status`, { method: "HEAD" })).status < 500) break;
    } catch {}
    if (i > 600) throw new Error("no start");
    await Bun.sleep(50);
  }
  return {
    base,
    pid: proc.pid,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const { default: postgres } = await import("postgres");
const sqlc = postgres(url.toString(), { max: 1, onnotice: () => {} });
const pending = async () =>
  Number((await sqlc`select count(*)::int as n from tessera_event_outbox where published_at is null`)[0]!.n);
const expired = async () =>
  Number(
    (await sqlc`select count(*)::int as n from auth_token where expire_t < ${Math.floor(Date.now() / 1000)}::int`)[0]!
      .n,
  );

async function run(name: string, checkerExtra: string, purgerExtra: string | null) {
  const checker = await instance(`token_cleanup_interval: 0\n${checkerExtra}`);
  try {
    const admin = await login(checker.base, "admin", "admin-password");
    const checkUrl = `${checker.base}/token/${admin}?tenant=${tenantUuid(100_000)}`;
    await wrk(checkUrl, { connections: 16, seconds: 3, script: "head.lua" });
    const before = await expired();
    const purger = purgerExtra === null ? null : await instance(`token_cleanup_interval: 1\n${purgerExtra}`);
    const cpu0 = cpuSeconds(checker.pid);
    const windows: WrkResult[] = [];
    const started = performance.now();
    while (performance.now() - started < seconds * 1000)
      windows.push(await wrk(checkUrl, { connections: 16, seconds: 5, script: "head.lua" }));
    const elapsed = (performance.now() - started) / 1000;
    const cpu = cpuSeconds(checker.pid) - cpu0;
    await purger?.stop();
    const purged = before - (await expired());
    const backlog = await pending();
    const worst = windows.reduce((a, b) => (b.p99 > a.p99 ? b : a));
    const p99s = windows.map((w) => w.p99.toFixed(1)).join(", ");
    console.log(
      `| ${name} | ${Math.round(purged / elapsed).toLocaleString("en")}/s | ${Math.round(worst.rps).toLocaleString("en")}/s | ${p99s} | ${((100 * cpu) / elapsed).toFixed(0)} % | ${backlog.toLocaleString("en")} |`,
    );
  } finally {
    await checker.stop();
  }
}

console.log(
  "| case | sessions purged | check rate (worst window) | check p99 per 5 s window (ms) | checking instance CPU | events left in the outbox |",
);
console.log("|---|---|---|---|---|---|");
await run("no purge (reference)", NO_BUS, null);
await run("purge; both instances relay events to RabbitMQ", BUS, BUS);
await run("purge; only the purging instance relays", NO_BUS, BUS);
await run("purge; nobody relays (events wait in the outbox)", NO_BUS, NO_BUS);
await sqlc.end();
const { loadavg } = await import("node:os");
console.log(
  `\nload average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
