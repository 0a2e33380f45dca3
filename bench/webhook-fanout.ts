// Does webhook fan-out move the token check's p99? One Tessera instance (a real process, on a scratch
// PostgreSQL database) with 10 webhooks subscribed to every event, each to its own local receiver (Bun.serve
// here, answering 204). In interleaved rounds, wrk measures HEAD /0.1/token/{token} on the instance:
//   A: no events;
//   B: events recorded at BENCH_EVENTS_PER_SECOND (default 1,000/s) by this script, inserted into the
//      outbox in batches every 100 ms as another instance's changes would be; the outbox trigger fans each
//      one out to the 10 webhooks, and the instance's delivery worker signs and POSTs them (10,000/s asked).
// Prints, per round, the events/s accepted, the deliveries/s received, the lag (age of the oldest pending
// delivery) and backlog at the round's end, the check's rate and p99; per B round also the cost of one delivery
// measured in CPU time (the instance process, and PostgreSQL's backends serving the scratch database) and in
// PostgreSQL transactions (each autocommit statement is one): figures a loaded machine stretches far less than
// wall-clock rates. Then the medians and the load average (the machine is shared: read the figures with it).
//
// After each B round the queue drains for up to BENCH_DRAIN_SECONDS (default 4) with nothing else running
// (the "drain" row: deliveries/s and the cost of a delivery alone); what is left then is dropped, so that the
// next A round measures the check alone. The defaults (2 rounds of 3 s) take about a minute on the loaded
// machine, the instance's start included.
//
//   npx bun bench/webhook-fanout.ts [rounds, default 2] [seconds per round, default 3]
//   (BENCH_EVENTS_PER_SECOND, BENCH_DELIVERY_CONCURRENCY (160), BENCH_PER_OWNER_CONCURRENCY (16))
import { loadavg } from "node:os";
import { adminLogin, InstanceFleet } from "../tests/helpers/tessera-instances.ts";
import { cpuSeconds, PG_URL, scratchDatabase, wrk, type WrkResult } from "./lib.ts";

const rounds = Number(process.argv[2] ?? 2);
const seconds = Number(process.argv[3] ?? 3);
const drainSeconds = Number(process.env.BENCH_DRAIN_SECONDS ?? 4);
const perSecond = Number(process.env.BENCH_EVENTS_PER_SECOND ?? 1000);
const ENDPOINTS = 10;
/** `outbound_delivery.concurrency` and `per_owner_concurrency` of the instance. */
const concurrency = Number(process.env.BENCH_DELIVERY_CONCURRENCY ?? 160);
const perOwner = Number(process.env.BENCH_PER_OWNER_CONCURRENCY ?? 16);

const scratch = await scratchDatabase();
if (!scratch) throw new Error(`no PostgreSQL at ${PG_URL}`);
const fleet = new InstanceFleet();
const received = new Array<number>(ENDPOINTS).fill(0);
const receivers = received.map((_, i) =>
  Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      await req.arrayBuffer();
      received[i]!++;
      return new Response(null, { status: 204 });
    },
  }),
);
const { default: postgres } = await import("postgres");
const sql = postgres(scratch.url, { max: 2, onnotice: () => {}, connection: { application_name: "bench" } });

try {
  const extra = {
    log_level: "error",
    outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true },
    outbound_delivery: { concurrency, per_owner_concurrency: perOwner },
  };
  fleet.bootstrap({ dbUri: scratch.url, extra });
  const instance = await fleet.start("fanout", { dbUri: scratch.url, extra });
  const token = await adminLogin(instance.url);
  for (const r of receivers) {
    const res = await fetch(`${instance.url}/webhooks`, {
      method: "POST",
      headers: { "X-Auth-Token": token, "Content-Type": "application/json" },
      body: JSON.stringify({ url: `http://127.0.0.1:${r.port}/`, events: ["*"], description: "bench" }),
    });
    if (res.status !== 201) throw new Error(`webhook creation: ${res.status} ${await res.text()}`);
  }
  const checkUrl = `${instance.url}/token/${token}`;
  const check = (s: number) => wrk(checkUrl, { connections: 8, seconds: s, script: "head.lua" });
  const backlog = async () => {
    const [row] = await sql`select count(*)::int as n,
        coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as lag
      from tessera_outbound_delivery where status = 'pending'`;
    return { pending: Number(row!.n), lag: Number(row!.lag) };
  };
  const dbName = new URL(scratch.url).pathname.slice(1);
  /** CPU seconds of the instance and of the database's backends (other than this script's), and its commits. */
  const costs = async () => {
    const backends = await sql`select pid from pg_stat_activity
      where datname = ${dbName} and pid <> pg_backend_pid() and application_name <> 'bench'`;
    let pg = 0;
    for (const b of backends) {
      try {
        pg += cpuSeconds(Number(b.pid));
      } catch {} // ended meanwhile
    }
    const [stat] = await sql`select xact_commit::float8 as x from pg_stat_database where datname = ${dbName}`;
    return { instance: cpuSeconds(instance.proc.pid), pg, commits: Number(stat!.x) };
  };

  /** Records `perSecond` events a second (batches every 100 ms) until `stop` is set; the events recorded. */
  async function produce(stop: { done: boolean }): Promise<number> {
    let n = 0;
    const started = performance.now();
    while (!stop.done) {
      const due = Math.floor(((performance.now() - started) / 1000) * perSecond) - n;
      if (due > 0) {
        await sql`insert into tessera_event_outbox (name, routing_key, headers, payload, aggregate)
          select 'bench_event', 'bench.event', '{}'::jsonb, jsonb_build_object('data', jsonb_build_object('n', g)),
                 'bench:' || (g % 200)
          from generate_series(${n}::int, ${n + due - 1}::int) g`;
        n += due;
      }
      await Bun.sleep(100);
    }
    return n;
  }

  await check(2); // warm-up
  const rows: { kind: "A" | "B"; r: WrkResult; delivered: number; events: number }[] = [];
  const perDelivery: { cpuMs: number; pgCpuMs: number; commits: number }[] = [];
  const drains: { rate: number; cpuMs: number; pgCpuMs: number; commits: number }[] = [];
  console.log(
    "| round | events/s accepted | deliveries/s received | lag at end (s) | pending at end | check rate | check p99 (ms) | per delivery: instance CPU (ms), PostgreSQL CPU (ms), commits |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  for (let round = 1; round <= rounds; round++) {
    for (const kind of ["A", "B"] as const) {
      const before = received.reduce((a, b) => a + b, 0);
      const costBefore = await costs();
      const stop = { done: false };
      const producing = kind === "B" ? produce(stop) : Promise.resolve(0);
      const started = performance.now();
      const r = await check(seconds);
      stop.done = true;
      const events = await producing;
      const elapsed = (performance.now() - started) / 1000;
      const count = received.reduce((a, b) => a + b, 0) - before;
      const delivered = count / elapsed;
      const costAfter = await costs();
      const left = await backlog();
      const row = { kind, r, delivered, events: events / elapsed };
      rows.push(row);
      let cost = "";
      if (kind === "B" && count > 0) {
        const c = {
          cpuMs: ((costAfter.instance - costBefore.instance) * 1000) / count,
          pgCpuMs: ((costAfter.pg - costBefore.pg) * 1000) / count,
          commits: (costAfter.commits - costBefore.commits) / count,
        };
        perDelivery.push(c);
        cost = `${c.cpuMs.toFixed(3)}, ${c.pgCpuMs.toFixed(3)}, ${c.commits.toFixed(2)}`;
      }
      console.log(
        `| ${round}${kind} | ${Math.round(row.events)} | ${Math.round(delivered)} | ${left.lag.toFixed(1)} | ${left.pending} | ${Math.round(r.rps)}/s | ${r.p99.toFixed(1)} | ${cost} |`,
      );
      // Draining, nothing else runs on the instance: the cost of a delivery alone.
      if (kind === "B") {
        const drainFrom = received.reduce((a, b) => a + b, 0);
        const drainCost = await costs();
        const drainStart = performance.now();
        for (const until = Date.now() + drainSeconds * 1000; Date.now() < until && (await backlog()).pending > 0; )
          await Bun.sleep(200);
        const n = received.reduce((a, b) => a + b, 0) - drainFrom;
        const c = await costs();
        if (n > 0) {
          const d = {
            rate: n / ((performance.now() - drainStart) / 1000),
            cpuMs: ((c.instance - drainCost.instance) * 1000) / n,
            pgCpuMs: ((c.pg - drainCost.pg) * 1000) / n,
            commits: (c.commits - drainCost.commits) / n,
          };
          drains.push(d);
          console.log(
            `|  drain | | ${Math.round(d.rate)} | | ${(await backlog()).pending} | | | ${d.cpuMs.toFixed(3)}, ${d.pgCpuMs.toFixed(3)}, ${d.commits.toFixed(2)} |`,
          );
        }
        // The next A round measures no fan-out: what is left is dropped (the "pending" of the drain row).
        // (Retried: it may deadlock with the worker's own batched updates of the same rows.)
        for (let attempt = 1; ; attempt++) {
          try {
            await sql`update tessera_outbound_delivery set status = 'dropped', finished_at = now(), claimed_by = null,
              claimed_until = null where status = 'pending'`;
            break;
          } catch (e) {
            if (attempt >= 5) throw e;
          }
        }
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const of = (kind: "A" | "B") => rows.filter((x) => x.kind === kind);
  console.log(
    `\nmedian check p99: A (no events) ${median(of("A").map((x) => x.r.p99)).toFixed(1)} ms, B (${perSecond}/s × ${ENDPOINTS}) ${median(of("B").map((x) => x.r.p99)).toFixed(1)} ms; ` +
      `median deliveries/s in B ${Math.round(median(of("B").map((x) => x.delivered)))}`,
  );
  if (drains.length > 0)
    console.log(
      `median while draining (no token checks): ${Math.round(median(drains.map((d) => d.rate)))} deliveries/s, instance CPU ${median(drains.map((d) => d.cpuMs)).toFixed(3)} ms, PostgreSQL CPU ${median(drains.map((d) => d.pgCpuMs)).toFixed(3)} ms, ${median(drains.map((d) => d.commits)).toFixed(2)} commits per delivery`,
    );
  if (perDelivery.length > 0)
    console.log(
      `median per delivery: instance CPU ${median(perDelivery.map((c) => c.cpuMs)).toFixed(3)} ms, PostgreSQL CPU ${median(perDelivery.map((c) => c.pgCpuMs)).toFixed(3)} ms, ${median(perDelivery.map((c) => c.commits)).toFixed(2)} commits`,
    );
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
} finally {
  for (const r of receivers) r.stop(true);
  await sql.end();
  await fleet.stopAll();
  await scratch.drop();
}
