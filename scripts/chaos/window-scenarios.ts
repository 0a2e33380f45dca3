// Chaos scenarios that measure a window (docs/operations.md): one instance cut off from PostgreSQL
// while another revokes (how long the cut one still grants from memory), a login storm through
// HAProxy while one of three instances is killed, and the embedded database's hung-thread window.
import { sql } from "drizzle-orm";
import { openDatabase } from "../../src/db/index.ts";
import { runLoad, summary } from "../../tests/helpers/ha-load.ts";
import { startHaproxy } from "../../tests/helpers/haproxy.ts";
import { tcpProxy } from "../../tests/helpers/tcp-proxy.ts";
import { adminToken, cleanups, cluster, ms, scenarioDir, started } from "./kit.ts";
import type { Scenario } from "./scenarios.ts";

const LOGIN_LOOPS = 24;

const WATCHDOG_SECONDS = 5;

export const windowScenarios: Scenario[] = [
  {
    name: "partition of one instance (stale window)",
    expected:
      "a token revoked on the other instance: granted by the cut one < db_timeout + 2 s, then 503; 404 after healing",
    needsCluster: true,
    async run() {
      const c = await cluster();
      const proxy = tcpProxy("127.0.0.1", c.port);
      cleanups.push(() => proxy.close());
      const cut = await started(
        scenarioDir("partition-cut"),
        `db_uri: "postgres://postgres@127.0.0.1:${proxy.port}/postgres"\ndb_timeout: 1`,
      );
      const other = await started(scenarioDir("partition-other"), `db_uri: "${c.url}"\ndb_timeout: 1`);
      const token = await adminToken(other.base);
      const check = async () => (await fetch(`${cut.base}/token/${token}`, { method: "HEAD" })).status;
      const before = await check(); // cached by the cut instance
      proxy.freeze();
      const cutAt = performance.now();
      const revoked = await fetch(`${other.base}/token/${token}`, { method: "DELETE" });
      const revokedAt = performance.now();
      let granted = 0;
      let lastGrantedAt = revokedAt;
      let during = before;
      try {
        while (ms(cutAt) < 10_000) {
          during = await check();
          if (during !== 204) break;
          granted++;
          lastGrantedAt = performance.now();
          await Bun.sleep(10);
        }
      } finally {
        proxy.restore();
      }
      // The stale window: until the last grant. The first refusal comes db_timeout later (the check
      // then reads the database, which does not answer).
      const staleMs = Math.round(lastGrantedAt - revokedAt);
      const refusedMs = Math.round(performance.now() - revokedAt);
      const healed = performance.now();
      let after = during;
      while (after !== 404 && ms(healed) < 30_000) {
        after = await check().catch(() => 0);
        await Bun.sleep(50);
      }
      for (const s of [cut, other]) s.proc.kill("SIGTERM");
      await Promise.all([cut.exitWithin(20_000), other.exitWithin(20_000)]);
      return {
        observed: `revoked on the other (${revoked.status}); the cut one granted it ${granted} times for ${staleMs} ms, answered ${during} at ${refusedMs} ms; ${after} ${ms(healed)} ms after healing`,
        ok: before === 204 && revoked.status === 200 && during === 503 && staleMs < 2000 && after === 404,
      };
    },
  },
  {
    name: "login storm via HAProxy, kill -9 of 1 of 3",
    expected: `${LOGIN_LOOPS} login loops: failures only those in flight on the killed one (≤ 1 per loop)`,
    needsCluster: true,
    async run() {
      const c = await cluster();
      const config = `db_uri: "${c.url}"\nmax_user_concurrent_sessions: 1000000`;
      const instances = await Promise.all(["s1", "s2", "s3"].map((n) => started(scenarioDir(`storm-${n}`), config)));
      const lb = await startHaproxy(instances.map((s, i) => ({ name: `s${i + 1}`, port: s.port })));
      cleanups.push(() => lb.stop());
      const token = await adminToken(lb.url);
      const victim = instances[1]!;
      const seconds = 8;
      // The storm alone first: on a small machine its logins queue for the password hashing, and the
      // longest gap a client sees comes from that as much as from the kill.
      const baseline = await runLoad(lb.url, token, { seconds: 4, checkers: 0, readers: 0, loginers: LOGIN_LOOPS });
      const result = await runLoad(lb.url, token, {
        seconds,
        checkers: 0,
        readers: 0,
        loginers: LOGIN_LOOPS,
        at: { seconds: 3, action: () => victim.proc.kill("SIGKILL") },
      });
      for (const s of [instances[0]!, instances[2]!]) s.proc.kill("SIGTERM");
      await Promise.all([instances[0]!.exitWithin(20_000), instances[2]!.exitWithin(20_000)]);
      const { logins } = result;
      return {
        observed: `${summary(result).split("; ")[2]} (${Math.round(logins.ok / seconds)}/s); without the kill: ${summary(baseline).split("; ")[2]}`,
        ok: logins.ok > 0 && baseline.logins.failed.length === 0 && logins.failed.length <= LOGIN_LOOPS,
      };
    },
  },
  {
    // A hung engine cannot be caused from outside the service's process, so this one runs the
    // embedded database in-process, as the service does; the service exits 1 at the "lost" signal.
    name: `hung PGlite thread (db_watchdog_seconds: ${WATCHDOG_SECONDS})`,
    expected: `the first stalled request to "lost" (the service's exit) ≤ ${WATCHDOG_SECONDS} s + 2 heartbeat periods; waiting requests fail`,
    needsCluster: false,
    async run() {
      const database = await openDatabase({ dataDir: "memory://", watchdogSeconds: WATCHDOG_SECONDS });
      await database.db.execute(sql`select 1`);
      const period = Math.min(5000, (WATCHDOG_SECONDS * 1000) / 3);
      await Bun.sleep(Math.random() * period); // anywhere in the heartbeat period
      const lost = new Promise<number>((resolve) => database.onLost(() => resolve(performance.now())));
      const stalledAt = performance.now();
      const holding = database.db.execute(sql`select pg_sleep(${WATCHDOG_SECONDS * 4})`).catch(() => {});
      const waiting = database.db.execute(sql`select 1`).then(
        () => "answered",
        () => "failed",
      );
      const windowMs = Math.round((await lost) - stalledAt);
      const waited = await waiting;
      await holding;
      await database.close().catch(() => {});
      return {
        observed: `lost ${windowMs} ms after the stall; the request waiting meanwhile ${waited}`,
        ok:
          windowMs >= WATCHDOG_SECONDS * 1000 &&
          windowMs <= WATCHDOG_SECONDS * 1000 + 2 * period &&
          waited === "failed",
      };
    },
  },
];
