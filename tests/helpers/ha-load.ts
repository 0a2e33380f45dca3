// Load and measurements for the high-availability tests and bench: loops of token checks, reads
// and logins through a load balancer (each loop has one request in flight at a time), and the
// delay until a revocation made on one instance is refused by all of them.

export interface Outcome {
  ok: number;
  /** Status of each failed request; -1 when no HTTP answer came at all. */
  failed: number[];
  /** Longest time between two successes of one loop of this kind (ms): the gap its clients saw. */
  gapMs: number;
}

export interface LoadResult {
  checks: Outcome;
  reads: Outcome;
  logins: Outcome;
  /** User creations; `acknowledged` holds the uuid of each one answered 201/200. */
  writes: Outcome & { acknowledged: string[] };
}

export interface LoadOptions {
  seconds: number;
  checkers: number;
  readers: number;
  loginers: number;
  writers?: number;
  /** Something to do once, `seconds` after the start (kill an instance, promote a standby). */
  at?: { seconds: number; action: () => unknown };
  /** Statuses accepted as an answer besides success (e.g. 503 while the database is away). */
  tolerated?: number[];
  /**
   * Each client's pause after an answered request (default none: back to back). A scenario that
   * needs requests all along rather than the most the machine can send pauses a few ms, leaving the
   * CPU to the instances under test and to the other test files.
   */
  pauseMs?: number;
}

/** The longest gap any kind of request saw: the time without service. */
export const longestGap = (r: LoadResult) => Math.max(r.checks.gapMs, r.reads.gapMs, r.logins.gapMs, r.writes.gapMs);

export async function runLoad(url: string, token: string, opts: LoadOptions): Promise<LoadResult> {
  const end = Date.now() + opts.seconds * 1000;
  const outcome = (): Outcome => ({ ok: 0, failed: [], gapMs: 0 });
  const result: LoadResult = {
    checks: outcome(),
    reads: outcome(),
    logins: outcome(),
    writes: { ...outcome(), acknowledged: [] },
  };
  const loop = async (
    outcome: Outcome,
    request: () => Promise<Response>,
    want: number,
    answered?: (body: string) => void,
  ) => {
    let lastOk = performance.now();
    while (Date.now() < end) {
      let status = -1;
      try {
        const res = await request();
        status = res.status;
        const body = await res.text();
        if (status === want) answered?.(body);
      } catch {
        status = -1;
      }
      if (status === want) {
        outcome.ok++;
        outcome.gapMs = Math.max(outcome.gapMs, performance.now() - lastOk);
        lastOk = performance.now();
        if (opts.pauseMs) await Bun.sleep(opts.pauseMs);
      } else {
        outcome.failed.push(status);
        if (!opts.tolerated?.includes(status)) await Bun.sleep(5);
        else await Bun.sleep(20);
      }
    }
  };
  const basic = { Authorization: `Basic ${btoa("admin:s3cret-admin")}`, "Content-Type": "application/json" };
  const loops: Promise<void>[] = [];
  for (let i = 0; i < opts.checkers; i++)
    loops.push(
      loop(result.checks, () => fetch(`${url}/token/${token}?scope=auth.users.read`, { method: "HEAD" }), 204),
    );
  for (let i = 0; i < opts.readers; i++)
    loops.push(loop(result.reads, () => fetch(`${url}/users?limit=5`, { headers: { "X-Auth-Token": token } }), 200));
  for (let i = 0; i < opts.loginers; i++)
    loops.push(
      loop(
        result.logins,
        () => fetch(`${url}/token`, { method: "POST", headers: basic, body: '{"expiration":600}' }),
        200,
      ),
    );
  for (let i = 0; i < (opts.writers ?? 0); i++) {
    const create = () =>
      fetch(`${url}/users`, {
        method: "POST",
        headers: { "X-Auth-Token": token, "Content-Type": "application/json" },
        body: JSON.stringify({ username: `w-${crypto.randomUUID()}` }),
      });
    loops.push(
      loop(result.writes, create, 200, (body) =>
        result.writes.acknowledged.push((JSON.parse(body) as { uuid: string }).uuid),
      ),
    );
  }
  if (opts.at) {
    const { seconds, action } = opts.at;
    loops.push(Bun.sleep(seconds * 1000).then(async () => void (await action())));
  }
  await Promise.all(loops);
  return result;
}

export function summary(r: LoadResult): string {
  const one = (name: string, o: Outcome) =>
    `${name} ${o.ok} ok / ${o.failed.length} failed${o.failed.length ? ` (${[...new Set(o.failed)].join(",")})` : ""}, longest gap ${o.gapMs.toFixed(0)} ms`;
  return [
    one("token checks", r.checks),
    one("reads", r.reads),
    one("logins", r.logins),
    ...(r.writes.ok + r.writes.failed.length ? [one("user creations", r.writes)] : []),
  ].join("; ");
}

/**
 * For each of `count` tokens: log in through `lbUrl`, check the token on every instance (so each
 * caches it), revoke it on one instance in turn, then poll every instance until each refuses it.
 * Returns, per revocation, the ms from the revocation's answer until the last instance refused.
 */
export async function revocationDelays(lbUrl: string, instanceUrls: string[], count: number): Promise<number[]> {
  const delays: number[] = [];
  const basic = { Authorization: `Basic ${btoa("admin:s3cret-admin")}`, "Content-Type": "application/json" };
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
