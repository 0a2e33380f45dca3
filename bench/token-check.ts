// Benchmark of the hot path: HEAD /0.1/token/{token}?scope=… against a fresh Tessera (PGlite in a
// temp dir, bootstrap user, a token with a realistic ACL), and a bare Bun.serve answering 204 in
// the same run (the ceiling). Prints a markdown table. Usage: npm run bench [-- seconds connections]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 50);
const root = join(import.meta.dir, "..");
const dir = mkdtempSync(join(tmpdir(), "tessera-bench-"));
const port = 9590;
const ceilingPort = 9591;
const ACL = [
  "confd.users.me.read", "confd.users.me.update", "confd.users.me.funckeys.*.read", "confd.users.me.lines.read",
  "calld.users.me.calls.read", "calld.users.me.calls.create", "calld.users.me.calls.*.delete", "chatd.users.me.#",
  "dird.directories.lookup.*.read", "dird.personal.#", "webhookd.users.me.subscriptions.#", "websocketd",
  "events.users.me.#", "events.calls.me", "auth.users.me.tokens.#", "auth.users.me.external.#",
  "!confd.users.me.delete", "!calld.users.me.calls.*.update", "!auth.users.me.tokens.mobile.delete", "!dird.personal.*.delete",
];
const SCOPE = "calld.users.me.calls.read";

function spawn(args: string[], env: Record<string, string> = {}) {
  return Bun.spawn(args, { cwd: root, env: { ...process.env, ...env }, stdout: "ignore", stderr: "ignore" });
}

async function waitFor(url: string, method = "GET") {
  for (let i = 0; i < 300; i++) {
    try {
      const r = await fetch(url, { method });
      if (r.status < 500) return;
    } catch {}
    await Bun.sleep(100);
  }
  throw new Error(`${url} did not come up`);
}

interface WrkResult { rps: number; p50: string; p99: string; }

async function wrk(url: string, duration = seconds): Promise<WrkResult> {
  const p = Bun.spawn(["wrk", "-t2", `-c${connections}`, `-d${duration}s`, "--latency", "-s", join(root, "bench/head.lua"), url], { stdout: "pipe" });
  const out = await new Response(p.stdout).text();
  await p.exited;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
  const p50 = /\s50%\s+(\S+)/.exec(out)?.[1] ?? "?";
  const p99 = /\s99%\s+(\S+)/.exec(out)?.[1] ?? "?";
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1];
  if (non2xx) throw new Error(`${non2xx} failed responses during the run:\n${out}`);
  return { rps, p50, p99 };
}

// BENCH_LOG_LEVEL=info measures with one log line per request (the default of a deployment).
const env = { TESSERA_DATA_DIR: join(dir, "data"), TESSERA_PORT: String(port), TESSERA_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "warning" };
const seed = Bun.spawnSync([process.execPath, "bench/seed.ts", JSON.stringify(ACL)], { cwd: root, env: { ...process.env, ...env } });
if (seed.exitCode !== 0) throw new Error(`seeding failed: ${seed.stderr}`);
const service = spawn([process.execPath, "src/main.ts"], env);
const ceiling = spawn([process.execPath, "bench/ceiling.ts", String(ceilingPort)]);
try {
  const base = `http://127.0.0.1:${port}/0.1`;
  await waitFor(`${base}/status`, "HEAD");
  await waitFor(`http://127.0.0.1:${ceilingPort}/`);
  const login = await fetch(`${base}/token`, { method: "POST", headers: { Authorization: `Basic ${btoa("bench:bench-password")}` }, body: JSON.stringify({ expiration: 3600 }) });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${await login.text()}`);
  const token = ((await login.json()) as { data: { token: string } }).data.token;
  const check = `${base}/token/${token}?scope=${SCOPE}`;
  if ((await fetch(check, { method: "HEAD" })).status !== 204) throw new Error("token check did not answer 204");
  const { data } = (await (await fetch(`${base}/token/${token}`)).json()) as { data: { acl: string[]; metadata: { tenant_uuid: string } } };
  const withTenant = `${check}&tenant=${data.metadata.tenant_uuid}`;
  if ((await fetch(withTenant, { method: "HEAD" })).status !== 204) throw new Error("token check with tenant did not answer 204");
  if (data.acl.length !== ACL.length) throw new Error(`unexpected token ACL: ${JSON.stringify(data.acl)}`);
  // A short warm-up of each target first, so the JIT has compiled the hot path before measuring.
  await wrk(check, 3);
  const tessera = await wrk(check);
  const tenantCheck = await wrk(withTenant);
  await wrk(`http://127.0.0.1:${ceilingPort}/`, 3);
  const bare = await wrk(`http://127.0.0.1:${ceilingPort}/`);
  const ratio = ((tessera.rps / bare.rps) * 100).toFixed(0);
  console.log(`wrk -t2 -c${connections} -d${seconds}s, HEAD, loopback, ${navigator.hardwareConcurrency} cores\n`);
  console.log("| target | requests/s | p50 | p99 |");
  console.log("|---|---:|---:|---:|");
  console.log(`| \`HEAD /0.1/token/{token}?scope=${SCOPE}\` (Tessera, PGlite) | ${Math.round(tessera.rps)} | ${tessera.p50} | ${tessera.p99} |`);
  console.log(`| same with \`&tenant={the user's tenant}\` | ${Math.round(tenantCheck.rps)} | ${tenantCheck.p50} | ${tenantCheck.p99} |`);
  console.log(`| bare \`Bun.serve\` answering 204 (ceiling) | ${Math.round(bare.rps)} | ${bare.p50} | ${bare.p99} |`);
  console.log(`\nTessera reaches ${ratio}% of the ceiling.`);
} finally {
  service.kill("SIGTERM");
  ceiling.kill("SIGTERM");
  await service.exited;
  rmSync(dir, { recursive: true, force: true });
}
