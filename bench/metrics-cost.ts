// What the metrics cost on the token check: the same HEAD /0.1/token/{token}?scope=… answered
// in-process (no network, so the relative cost is an upper bound of what wrk would see) by the
// server's handler of two apps on one database, metrics off and on, in alternating rounds.
// Usage: bun bench/metrics-cost.ts [rounds] [requests-per-round]
import { parseConfig } from "../src/config/config.ts";
import { openDatabase } from "../src/db/index.ts";
import { silentLogger } from "../src/observe/log.ts";
import { createHandler } from "../src/app.ts";
import { buildContext, closeContext } from "../src/services/app-context.ts";
import { startServices } from "../src/boot/startup.ts";
import { insertToken } from "../src/services/auth/tokens.ts";

const rounds = Number(process.argv[2] ?? 7);
const perRound = Number(process.argv[3] ?? 50_000);
const ACL = [
  "confd.users.me.read",
  "calld.users.me.calls.read",
  "calld.users.me.calls.*.delete",
  "chatd.users.me.#",
  "!confd.users.me.delete",
];

const database = await openDatabase({ dataDir: "memory://" });
const base = { token_cleanup_interval: 0, log_level: "warning" };
const off = await buildContext(parseConfig(base), database, silentLogger);
await startServices(off);
const on = { ...off, config: parseConfig({ ...base, metrics: { port: 0 } }) };
const apps = { off: createHandler(off), on: createHandler(on) }; // as the server calls them
const issued = await insertToken(off, off.db, {
  authId: "bench",
  pbxUserUuid: null,
  acl: ACL,
  metadata: { tenant_uuid: off.topTenantUuid },
  expiration: 3600,
  userAgent: "bench",
  remoteAddr: "127.0.0.1",
  sessionTenantUuid: off.topTenantUuid,
  mobile: false,
});
const url = `http://localhost/0.1/token/${issued.record.uuid}?scope=calld.users.me.calls.read`;

const peers = { requestIP: () => ({ address: "127.0.0.1" }) };

async function round(app: (typeof apps)["on"]): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < perRound; i++) {
    const res = await app(new Request(url, { method: "HEAD" }), peers);
    if (res.status !== 204) throw new Error(`unexpected ${res.status}`);
  }
  return perRound / ((performance.now() - started) / 1000);
}

await round(apps.off);
await round(apps.on); // warm-up
const rates = { off: [] as number[], on: [] as number[] };
for (let r = 0; r < rounds; r++) {
  rates.off.push(await round(apps.off));
  rates.on.push(await round(apps.on));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const [a, b] = [median(rates.off), median(rates.on)];
console.log(
  `in-process token checks/s (median of ${rounds} rounds of ${perRound}): metrics off ${Math.round(a)}, on ${Math.round(b)} → cost ${(((a - b) / a) * 100).toFixed(1)}%`,
);
await closeContext(off);
