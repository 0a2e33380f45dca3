// A PostgreSQL failover under load: a primary with synchronous replication and a streaming standby
// (private clusters on free ports, never the shared server), two Tessera instances (real processes)
// connected by a multi-host URL with target_session_attrs=read-write, behind HAProxy. The primary
// crashes and the standby is promoted while token checks, reads, logins, user creations and
// revocations run. Both instances follow the new primary without a restart; no acknowledged user
// creation is lost; no token is accepted by the other instance longer than the normal propagation
// (< 100 ms) after its revocation was acknowledged (strict mode); the time without service is
// printed. Run once per token_check_staleness choice: strict (0) reads the database for every token
// check during the window (503 while it is away), 5 s of staleness keeps answering them from the
// cache (none fails).
import { afterEach, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { haproxyBinary, startHaproxy, type Haproxy } from "../helpers/haproxy.ts";
import { longestGap, runLoad, summary } from "../helpers/ha-load.ts";
import { pgClusterAvailable, startPgCluster, startStandby, type PgCluster } from "../helpers/pg-cluster.ts";
import { adminLogin, InstanceFleet } from "../helpers/tessera-instances.ts";

if (!pgClusterAvailable)
  console.warn("PostgreSQL binaries or the postgres user are missing: the failover tests are skipped");

const basic = { Authorization: `Basic ${btoa("admin:s3cret-admin")}`, "Content-Type": "application/json" };

describe.skipIf(!pgClusterAvailable || !haproxyBinary)(
  "PostgreSQL failover under load (primary + synchronous standby)",
  () => {
    const cleanups: (() => Promise<unknown>)[] = [];
    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
    }, 60_000);

    async function failover(staleness: number) {
      const primary = await startPgCluster({ synchronous: true });
      cleanups.push(() => primary.destroy());
      const standby: PgCluster = await startStandby(primary);
      cleanups.push(() => standby.destroy());
      // Replication is synchronous before anything is written: a commit waits for the standby.
      const admin = postgres(primary.url, { max: 1, onnotice: () => {} });
      let state = "";
      for (let n = 0; n < 100 && state !== "sync"; n++, await Bun.sleep(100))
        state = (await admin`select sync_state from pg_stat_replication`)[0]?.sync_state ?? "";
      await admin.end();
      expect(state).toBe("sync");
      const dbUri = `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/postgres?target_session_attrs=read-write`;
      const fleet = new InstanceFleet();
      cleanups.push(() => fleet.stopAll());
      fleet.bootstrap({ dbUri });
      const extra = { token_check_staleness: staleness };
      const [a, b] = await Promise.all([fleet.start("a", { dbUri, extra }), fleet.start("b", { dbUri, extra })]);
      const lb: Haproxy = await startHaproxy([a!, b!].map((i) => ({ name: i.name, port: i.port })));
      cleanups.push(() => lb.stop());
      const token = await adminLogin(lb.url);

      // Tokens revoked one by one on A during the failover; each is cached by B beforehand.
      const doomed: string[] = [];
      for (let i = 0; i < 40; i++) {
        const login = await fetch(`${a!.url}/token`, { method: "POST", headers: basic, body: '{"expiration":600}' });
        doomed.push(((await login.json()) as { data: { token: string } }).data.token);
      }
      for (const t of doomed) expect((await fetch(`${b!.url}/token/${t}`, { method: "HEAD" })).status).toBe(204);
      const revoked: { token: string; at: number }[] = [];
      /** For each check of a revoked token answered 204: ms since its revocation was acknowledged. */
      const acceptedAfterRevocation: number[] = [];
      let revoking = true;
      const revocations = (async () => {
        for (const t of doomed) {
          if (!revoking) break;
          const res = await fetch(`${a!.url}/token/${t}`, { method: "DELETE" }).catch(() => null);
          if (res?.status === 200) revoked.push({ token: t, at: performance.now() });
          // Checked on B right after the acknowledgement, and on both instances again below.
          for (const r of revoked) {
            const seen = await fetch(`${b!.url}/token/${r.token}`, { method: "HEAD" }).then(
              (x) => x.status,
              () => -1,
            );
            if (seen === 204) acceptedAfterRevocation.push(performance.now() - r.at);
          }
          await Bun.sleep(100);
        }
      })();

      let crashedAt = 0;
      let promotedAt = 0;
      const load = await runLoad(lb.url, token, {
        seconds: 8,
        checkers: 4,
        readers: 1,
        loginers: 1,
        writers: 1,
        tolerated: [503],
        // Requests all along the failover, not the most the machine can send: back to back, the
        // load held both cores for its 8 s (27 s of CPU for this file alone).
        pauseMs: 2,
        at: {
          seconds: 1.5,
          action: async () => {
            crashedAt = performance.now();
            await primary.crash();
            await standby.promote();
            promotedAt = performance.now();
          },
        },
      });
      revoking = false;
      await revocations;
      const pids = [a!.proc.pid, b!.proc.pid];
      console.log(
        `failover (token_check_staleness ${staleness}): primary crash → standby promoted in ${(promotedAt - crashedAt).toFixed(0)} ms; ${summary(load)}`,
      );

      // Only the database's absence may show: 503 with the JSON body, never a 401, 404 or 500.
      for (const o of [load.checks, load.reads, load.logins, load.writes])
        for (const s of o.failed) expect([503]).toContain(s);
      expect(longestGap(load)).toBeLessThan(15_000);
      // Both instances follow the new primary without a restart.
      for (const i of [a!, b!]) {
        expect(i.proc.exitCode).toBeNull();
        let ready = 0;
        for (let n = 0; n < 100 && ready !== 200; n++, await Bun.sleep(100))
          ready = (await fetch(`${i.url}/ready`)).status;
        expect(ready).toBe(200);
      }
      expect([a!.proc.pid, b!.proc.pid]).toEqual(pids);
      const after = await fetch(`${lb.url}/token`, { method: "POST", headers: basic, body: "{}" });
      expect(after.status).toBe(200);
      // No acknowledged write is lost: every user whose creation was answered 200 is on the new primary.
      expect(load.writes.acknowledged.length).toBeGreaterThan(3);
      const sql = postgres(standby.url, { max: 1, onnotice: () => {} });
      try {
        const found = await sql<
          { n: number }[]
        >`select count(*)::int as n from auth_user where uuid::text = any(${load.writes.acknowledged}::text[])`;
        expect(found[0]!.n).toBe(load.writes.acknowledged.length);
      } finally {
        await sql.end();
      }
      // Every acknowledged revocation is refused by both instances from now on.
      expect(revoked.length).toBeGreaterThan(5);
      for (const r of revoked)
        for (const i of [a!, b!])
          expect((await fetch(`${i.url}/token/${r.token}`, { method: "HEAD" })).status).toBe(404);
      return { load, acceptedAfterRevocation, crashedAt, promotedAt };
    }

    test("strict (token_check_staleness 0): token checks read the database during the window, no revoked token accepted past the normal propagation", async () => {
      const { load, acceptedAfterRevocation } = await failover(0);
      // The NOTIFY takes milliseconds to reach B in normal operation (the goal: < 100 ms); never longer.
      expect(acceptedAfterRevocation.filter((ms) => ms >= 100)).toEqual([]);
      // Checks read the database during the window: some answer 503, others wait for a connection and
      // are answered once the standby is promoted (the strict mode's cost is shown by staleness.test.ts).
    }, 90_000);

    test("bounded staleness (token_check_staleness 5): cached token checks never fail during the failover", async () => {
      const { load, acceptedAfterRevocation } = await failover(5);
      expect(load.checks.failed).toEqual([]);
      expect(load.checks.ok).toBeGreaterThan(200);
      // The price: a revocation may be missed by another instance for at most 5 s (printed when it happens).
      if (acceptedAfterRevocation.length)
        console.log(
          `revoked tokens accepted by B under staleness, ms after the revocation: ${acceptedAfterRevocation.map((ms) => ms.toFixed(0)).join(", ")}`,
        );
      for (const ms of acceptedAfterRevocation) expect(ms).toBeLessThan(5000 + 1000);
    }, 90_000);
  },
);
