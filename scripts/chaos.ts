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
//   partition of one        one of two instances cut off from PostgreSQL (a frozen TCP proxy) while
//                           the other revokes a token: how long the cut one still grants it
//   login storm             24 login loops through HAProxy, one of 3 instances SIGKILLed: failures
//                           and the longest gap
//   hung PGlite thread      (in-process: a hung engine cannot be caused from outside) a statement
//                           holds the engine: the time until the watchdog declares it lost
//
// Everything stays on loopback and is private to the run: a PostgreSQL cluster of its own
// (tests/helpers/pg-cluster.ts), TCP proxies, temporary directories; the shared PostgreSQL is never
// touched and the shared RabbitMQ only through a proxy. Each scenario is bounded (SCENARIO_SECONDS);
// the whole run takes three to five minutes. Not part of `npm test` (time), exit 1 if any check fails.
import Table from "cli-table3";
import { pgClusterAvailable } from "../tests/helpers/pg-cluster.ts";
import { cleanups, type Outcome } from "./chaos/kit.ts";
import { scenarios } from "./chaos/scenarios.ts";
import { windowScenarios } from "./chaos/window-scenarios.ts";

const SCENARIO_SECONDS = 120;

async function bounded(run: () => Promise<Outcome>): Promise<Outcome & { seconds: number }> {
  const t = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<Outcome>(
    (resolve) =>
      (timer = setTimeout(
        () => resolve({ observed: `no outcome within ${SCENARIO_SECONDS} s`, ok: false }),
        SCENARIO_SECONDS * 1000,
      )),
  );
  const outcome = await Promise.race([
    run().catch((e) => ({ observed: `error: ${(e as Error).message}`.slice(0, 300), ok: false })),
    late,
  ]);
  clearTimeout(timer);
  return { ...outcome, seconds: (performance.now() - t) / 1000 };
}

const only = process.argv.slice(2).join(" ").toLowerCase();
const table = new Table({
  head: ["scenario", "expected", "observed", "result", "s"],
  colWidths: [24, 30, 60, 9, 6],
  wordWrap: true,
  style: { head: [], border: [] },
});
let failed = 0;
try {
  for (const { name, expected, needsCluster, run } of [...scenarios, ...windowScenarios]) {
    if (only && !name.toLowerCase().includes(only)) continue;
    const outcome: Outcome & { seconds: number } =
      needsCluster && !pgClusterAvailable
        ? { observed: "PostgreSQL binaries or the postgres user missing", ok: "skipped", seconds: 0 }
        : await bounded(run);
    if (outcome.ok === false) failed++;
    console.error(
      `${name}: ${outcome.ok === "skipped" ? "skipped" : outcome.ok ? "ok" : "FAILED"} — ${outcome.observed}`,
    );
    table.push([
      name,
      expected,
      outcome.observed,
      outcome.ok === "skipped" ? "skipped" : outcome.ok ? "ok" : "FAILED",
      outcome.seconds.toFixed(0),
    ]);
  }
} finally {
  for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => {});
}
console.log(table.toString());
process.exit(failed > 0 ? 1 : 0);
