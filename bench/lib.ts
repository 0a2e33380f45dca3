// What the benchmark sections share: wrk runs, Tessera processes with a given configuration, and
// scratch PostgreSQL databases.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const root = join(import.meta.dir, "..");
export const PG_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export interface WrkResult {
  rps: number;
  p50: number;
  p99: number;
  /** Requests completed in the run (absent from medians). */
  requests?: number;
}

/** Milliseconds from wrk's `1.23ms`, `456.00us`, `1.02s`. */
function ms(value: string | undefined): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(value ?? "");
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  return m[2] === "us" ? n / 1000 : m[2] === "ms" ? n : m[2] === "s" ? n * 1000 : n * 60_000;
}

export interface WrkOptions {
  connections: number;
  seconds: number;
  script?: string;
  env?: Record<string, string>;
  threads?: number;
}

export async function wrk(url: string, o: WrkOptions): Promise<WrkResult> {
  const args = ["wrk", `-t${o.threads ?? 1}`, `-c${o.connections}`, `-d${o.seconds}s`, "--latency", "--timeout", "10s"];
  if (o.script) args.push("-s", join(root, "bench", o.script));
  const p = Bun.spawn([...args, url], { stdout: "pipe", stderr: "pipe", env: { ...process.env, ...(o.env ?? {}) } });
  const out = await new Response(p.stdout).text();
  await p.exited;
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1];
  if (non2xx) throw new Error(`${non2xx} failed responses during the run of ${url}:\n${out}`);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? 0),
    p50: ms(/\s50%\s+(\S+)/.exec(out)?.[1]),
    p99: ms(/\s99%\s+(\S+)/.exec(out)?.[1]),
  };
}

/** A short run first, so the JIT has compiled the path before it is measured. */
/**
 * CPU seconds (user + system) a process has used so far (Linux /proc, clock ticks of 10 ms). Per
 * request, it is a cost that a loaded machine stretches far less than wall-clock latency.
 */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export async function measure(url: string, o: WrkOptions): Promise<WrkResult> {
  await wrk(url, { ...o, seconds: Math.min(3, o.seconds) });
  return wrk(url, o);
}

export async function waitFor(url: string, method = "GET"): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url, { method })).status < 500) return;
    } catch {}
    await Bun.sleep(100);
  }
  throw new Error(`${url} did not come up`);
}

export interface Tessera {
  base: string;
  config: string;
  run(script: string, ...args: string[]): void;
  /** The server process (for its CPU time and memory). */
  pid: number;
  stop(): Promise<void>;
}

// BENCH_PORT: the first port (another benchmark on the machine may hold 9590).
let nextPort = Number(process.env.BENCH_PORT ?? 9590);

/**
 * Writes a config file (YAML given as text) and starts Tessera with it; `prepare` runs first. `cwd`:
 * the checkout to start (another one for an A/B comparison, BENCH_COMPARE).
 */
export async function startTessera(
  configYaml: string,
  prepare?: (t: Omit<Tessera, "stop" | "base" | "pid">) => void,
  cwd: string = root,
): Promise<Tessera> {
  const dir = mkdtempSync(join(tmpdir(), "tessera-bench-"));
  const port = nextPort++;
  // A port another process holds would have that process answer the measurements instead.
  try {
    Bun.serve({ port, hostname: "127.0.0.1", fetch: () => new Response() }).stop(true);
  } catch {
    throw new Error(`port ${port} is taken: stop what holds it, or set BENCH_PORT`);
  }
  const config = join(dir, "config.yml");
  // A `rest_api: {…}` line of the caller's joins the port's mapping (one key may appear once).
  const rest = /^rest_api: \{(.*)\}$/m.exec(configYaml)?.[1];
  const others = configYaml.replace(/^rest_api: \{.*\}$/m, "");
  writeFileSync(
    config,
    `data_dir: ${join(dir, "data")}\nrest_api: {port: ${port}${rest ? `, ${rest}` : ""}}\n${others}\n`,
  );
  const env = { ...process.env, TESSERA_CONFIG: config };
  const run = (script: string, ...args: string[]) => {
    const r = Bun.spawnSync([process.execPath, script, ...args], { cwd, env });
    if (r.exitCode !== 0) throw new Error(`${script} failed: ${r.stderr}`);
  };
  prepare?.({ config, run });
  // BENCH_TESSERA_FLAGS: Bun flags for the server, e.g. `--cpu-prof-md --cpu-prof-dir=/tmp/prof` to see
  // where a section's time goes (the profile is written when the server stops).
  const flags = (process.env.BENCH_TESSERA_FLAGS ?? "").split(/\s+/).filter(Boolean);
  const proc = Bun.spawn([process.execPath, ...flags, "src/main.ts"], { cwd, env, stdout: "ignore", stderr: "ignore" });
  const base = `http://127.0.0.1:${port}/0.1`;
  await waitFor(`${base}/status`, "HEAD");
  return {
    base,
    config,
    run,
    pid: proc.pid,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function login(base: string, username: string, password: string): Promise<string> {
  const r = await fetch(`${base}/token`, {
    method: "POST",
    headers: { Authorization: `Basic ${btoa(`${username}:${password}`)}` },
    body: JSON.stringify({ expiration: 36000 }),
  });
  if (r.status !== 200) throw new Error(`login of ${username} failed: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { data: { token: string } }).data.token;
}

/** A fresh database on the benchmark's PostgreSQL server, or null when none answers. */
export async function scratchDatabase(): Promise<{ url: string; drop(): Promise<void> } | null> {
  const { default: postgres } = await import("postgres");
  const admin = postgres(PG_URL, { max: 1, onnotice: () => {}, connect_timeout: 3 });
  const name = `tessera_bench_${process.pid}_${Date.now()}`;
  try {
    await admin.unsafe(`create database "${name}"`);
  } catch {
    await admin.end();
    return null;
  }
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    },
  };
}
