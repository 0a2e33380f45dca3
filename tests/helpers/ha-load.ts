// Load and measurements for the high-availability tests and bench: loops of token checks, reads
// and logins through a load balancer (each loop has one request in flight at a time), and the
// delay until a revocation made on one instance is refused by all of them.

export interface Outcome {
  ok: number;
  /** Status of each failed request; -1 when no HTTP answer came at all. */
  failed: number[];
}

export interface LoadResult {
  checks: Outcome;
  reads: Outcome;
  logins: Outcome;
  /** Longest time between two successes of the same loop kind (ms): the gap clients saw. */
  longestGapMs: number;
}

export interface LoadOptions {
  seconds: number;
  checkers: number;
  readers: number;
  loginers: number;
  /** Something to do once, `seconds` after the start (kill an instance, promote a standby). */
  at?: { seconds: number; action: () => unknown };
  /** Statuses accepted as an answer besides success (e.g. 503 while the database is away). */
  tolerated?: number[];
}

export async function runLoad(url: string, token: string, opts: LoadOptions): Promise<LoadResult> {
  const end = Date.now() + opts.seconds * 1000;
  const result: LoadResult = { checks: { ok: 0, failed: [] }, reads: { ok: 0, failed: [] }, logins: { ok: 0, failed: [] }, longestGapMs: 0 };
  const loop = async (outcome: Outcome, request: () => Promise<Response>, want: number) => {
    let lastOk = performance.now();
    while (Date.now() < end) {
      let status = -1;
      try {
        const res = await request();
        status = res.status;
        await res.arrayBuffer();
      } catch {
        status = -1;
      }
      if (status === want) {
        outcome.ok++;
        result.longestGapMs = Math.max(result.longestGapMs, performance.now() - lastOk);
        lastOk = performance.now();
      } else {
        outcome.failed.push(status);
        if (!opts.tolerated?.includes(status)) await Bun.sleep(5);
        else await Bun.sleep(20);
      }
    }
  };
  const basic = { Authorization: `Basic ${btoa("admin:s3cret")}`, "Content-Type": "application/json" };
  const loops: Promise<void>[] = [];
  for (let i = 0; i < opts.checkers; i++) loops.push(loop(result.checks, () => fetch(`${url}/token/${token}?scope=auth.users.read`, { method: "HEAD" }), 204));
  for (let i = 0; i < opts.readers; i++) loops.push(loop(result.reads, () => fetch(`${url}/users?limit=5`, { headers: { "X-Auth-Token": token } }), 200));
  for (let i = 0; i < opts.loginers; i++) loops.push(loop(result.logins, () => fetch(`${url}/token`, { method: "POST", headers: basic, body: '{"expiration":600}' }), 200));
  if (opts.at) {
    const { seconds, action } = opts.at;
    loops.push(Bun.sleep(seconds * 1000).then(async () => void (await action())));
  }
  await Promise.all(loops);
  return result;
}

export function summary(r: LoadResult): string {
  const one = (name: string, o: Outcome) => `${name} ${o.ok} ok / ${o.failed.length} failed${o.failed.length ? ` (${[...new Set(o.failed)].join(",")})` : ""}`;
  return `${one("token checks", r.checks)}, ${one("reads", r.reads)}, ${one("logins", r.logins)}; longest gap between successes ${r.longestGapMs.toFixed(0)} ms`;
}

/**
 * For each of `count` tokens: log in through `lbUrl`, check the token on every instance (so each
 * caches it), revoke it on one instance in turn, then poll every instance until each refuses it.
 * Returns, per revocation, the ms from the revocation's answer until the last instance refused.
 */
export async function revocationDelays(lbUrl: string, instanceUrls: string[], count: number): Promise<number[]> {
  const delays: number[] = [];
  const basic = { Authorization: `Basic ${btoa("admin:s3cret")}`, "Content-Type": "application/json" };
  for (let n = 0; n < count; n++) {
    const login = await fetch(`${lbUrl}/token`, { method: "POST", headers: basic, body: '{"expiration":600}' });
    if (login.status !== 200) throw new Error(`login → ${login.status}`);
    const token = ((await login.json()) as { data: { token: string } }).data.token;
    for (const u of instanceUrls) {
      const warm = await fetch(`${u}/token/${token}`, { method: "HEAD" });
      if (warm.status !== 204) throw new Error(`token check on ${u} → ${warm.status} before the revocation`);
    }
    const revoked = await fetch(`${instanceUrls[n % instanceUrls.length]}/token/${token}`, { method: "DELETE" });
    if (revoked.status !== 200) throw new Error(`revocation → ${revoked.status}`);
    const at = performance.now();
    const refused = instanceUrls.map(async (u) => {
      for (;;) {
        if ((await fetch(`${u}/token/${token}`, { method: "HEAD" })).status === 404) return performance.now() - at;
        if (performance.now() - at > 5000) throw new Error(`${u} still accepts a token revoked 5 s ago`);
      }
    });
    delays.push(Math.max(...(await Promise.all(refused))));
  }
  return delays;
}
