// `npx bun bench/ha.ts [section...]`: the high-availability figures of docs/scaling.md's "Scaling and
// high availability" section, with the harness of the tests (tests/helpers: real processes,
// HAProxy, private PostgreSQL clusters), everything removed afterwards. Sections:
//   lb        3 instances on one PostgreSQL behind HAProxy: token checks through HAProxy and on one
//             instance (wrk, 64 connections); 1,000 revocations, each made on one instance in turn,
//             and the delay until all three refuse the token; an instance SIGKILLed under load
//   failover  primary + synchronous standby, 2 instances behind HAProxy: the primary crashes and
//             the standby is promoted under load, strict and with token_check_staleness 5; the
//             time without service per kind of request
// BENCH_SECONDS (default 10) is the length of each wrk run; BENCH_DATABASE_URL the shared
// PostgreSQL server for the lb section (a scratch database is created and dropped).
import { wrk } from "./lib.ts";
import { startHaproxy } from "../tests/helpers/haproxy.ts";
import { longestGap, revocationDelays, runLoad, summary } from "../tests/helpers/ha-load.ts";
import { startPgCluster, startStandby } from "../tests/helpers/pg-cluster.ts";
import { adminLogin, InstanceFleet } from "../tests/helpers/tessera-instances.ts";

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const sections = process.argv.slice(2).length ? process.argv.slice(2) : ["lb", "failover"];
const lines: string[] = [];
const say = (line: string) => {
  lines.push(line);
  console.error(line);
};
const pct = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

async function lbSection() {
  const { default: postgres } = await import("postgres");
  const server = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const name = `tessera_bench_ha_${process.pid}`;
  const admin = postgres(server, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const dbUri = server.replace(/\/[^/?]*(\?|$)/, `/${name}$1`);
  const fleet = new InstanceFleet();
  let lb: Awaited<ReturnType<typeof startHaproxy>> | null = null;
  try {
    fleet.bootstrap({ dbUri });
    const instances = await Promise.all(
      ["t1", "t2", "t3"].map((n) => fleet.start(n, { dbUri, extra: { db_pool_size: 8 } })),
    );
    lb = await startHaproxy(instances.map((i) => ({ name: i.name, port: i.port })));
    const token = await adminLogin(lb.url);
    for (const i of instances) await fetch(`${i.url}/token/${token}`, { method: "HEAD" }); // cached everywhere
    for (const [target, url] of [
      ["one instance, direct", instances[0]!.url],
      ["3 instances through HAProxy", lb.url],
    ] as const) {
      await wrk(`${url}/token/${token}?scope=auth.users.read`, { connections: 64, seconds: 3, script: "head.lua" });
      const r = await wrk(`${url}/token/${token}?scope=auth.users.read`, {
        connections: 64,
        seconds,
        script: "head.lua",
      });
      say(
        `| token check, ${target} (64 connections) | ${Math.round(r.rps).toLocaleString("en")}/s | p50 ${r.p50.toFixed(2)} ms | p99 ${r.p99.toFixed(2)} ms |`,
      );
    }
    const delays = await revocationDelays(
      lb.url,
      instances.map((i) => i.url),
      1000,
    );
    const over = delays.filter((d) => d >= 100).length;
    say(
      `| 1,000 revocations, until all 3 instances refuse | p50 ${pct(delays, 0.5).toFixed(1)} ms | p99 ${pct(delays, 0.99).toFixed(1)} ms | max ${pct(delays, 1).toFixed(1)} ms, ${over} of 1,000 at 100 ms or more |`,
    );
    const victim = instances[1]!;
    const load = await runLoad(lb.url, token, {
      seconds: 6,
      checkers: 8,
      readers: 2,
      loginers: 2,
      writers: 1,
      at: { seconds: 2, action: () => victim.kill("SIGKILL") },
    });
    say(`| SIGKILL of 1 of 3 instances under load | ${summary(load)} |`);
  } finally {
    await lb?.stop();
    await fleet.stopAll();
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

async function failoverSection(staleness: number) {
  const primary = await startPgCluster({ synchronous: true });
  const fleet = new InstanceFleet();
  let lb: Awaited<ReturnType<typeof startHaproxy>> | null = null;
  let standby: Awaited<ReturnType<typeof startStandby>> | null = null;
  try {
    standby = await startStandby(primary);
    const dbUri = `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/postgres?target_session_attrs=read-write`;
    fleet.bootstrap({ dbUri });
    const extra = { token_check_staleness: staleness };
    const instances = await Promise.all(["a", "b"].map((n) => fleet.start(n, { dbUri, extra })));
    lb = await startHaproxy(instances.map((i) => ({ name: i.name, port: i.port })));
    const token = await adminLogin(lb.url);
    let promotion = 0;
    const sb = standby;
    const load = await runLoad(lb.url, token, {
      seconds: 10,
      checkers: 8,
      readers: 1,
      loginers: 2,
      writers: 2,
      tolerated: [503],
      at: {
        seconds: 3,
        action: async () => {
          const t0 = performance.now();
          await primary.crash();
          await sb.promote();
          promotion = performance.now() - t0;
        },
      },
    });
    const sql = (await import("postgres")).default(sb.url, { max: 1, onnotice: () => {} });
    const [row] =
      await sql`select count(*)::int as n from auth_user where uuid::text = any(${load.writes.acknowledged}::text[])`;
    await sql.end();
    const lost = load.writes.acknowledged.length - row!.n;
    say(
      `| failover, token_check_staleness ${staleness} | promotion ${promotion.toFixed(0)} ms; time without service ${longestGap(load).toFixed(0)} ms | ${summary(load)}; acknowledged creations lost: ${lost} of ${load.writes.acknowledged.length} |`,
    );
  } finally {
    await lb?.stop();
    await fleet.stopAll();
    await standby?.destroy();
    await primary.destroy();
  }
}

for (const section of sections) {
  if (section === "lb") await lbSection();
  else if (section === "failover") {
    await failoverSection(0);
    await failoverSection(5);
  } else throw new Error(`unknown section ${section} (lb, failover)`);
}
console.log(lines.join("\n"));
