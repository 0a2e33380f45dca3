// Valid token checks during a flood of unknown tokens (issue 11, item 8): one wrk floods
// HEAD /0.1/token/<random uuid> on 64 connections while another measures the latency of a valid,
// cached token on 4 connections. PGlite always; PostgreSQL too with BENCH_DATABASE_URL (a fresh
// database is created on that server and dropped afterwards).
// Usage: npx bun bench/flood.ts [seconds]   (bench/run.sh installs wrk; or apt-get install wrk)
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const seconds = Number(process.argv[2] ?? 10);
// BENCH_ROOT runs another checkout's service (e.g. to compare with main) with these scripts.
const root = process.env.BENCH_ROOT ?? join(import.meta.dir, "..");
const port = 9592;

interface Run {
  rps: number;
  p50: string;
  p99: string;
  non2xx: number;
  errors: string;
}

async function wrk(args: string[], url: string): Promise<Run> {
  const p = Bun.spawn(["wrk", ...args, "--latency", url], { stdout: "pipe" });
  const out = await new Response(p.stdout).text();
  await p.exited;
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    p50: /\s50%\s+(\S+)/.exec(out)?.[1] ?? "?",
    p99: /\s99%\s+(\S+)/.exec(out)?.[1] ?? "?",
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0),
    errors: /Socket errors:.*/.exec(out)?.[0] ?? "",
  };
}

async function measure(kind: string, env: Record<string, string>): Promise<string[]> {
  const seed = Bun.spawnSync([process.execPath, "bench/seed.ts", JSON.stringify(["calld.users.me.calls.read"])], {
    cwd: root,
    env: { ...process.env, ...env },
  });
  if (seed.exitCode !== 0) throw new Error(`seeding failed: ${seed.stderr}`);
  const service = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: root,
    env: { ...process.env, ...env },
    stdout: "ignore",
    stderr: "ignore",
  });
  try {
    const base = `http://127.0.0.1:${port}/0.1`;
    for (let i = 0; i < 600; i++) {
      try {
        if ((await fetch(`${base}/status`, { method: "HEAD" })).status === 200) break;
      } catch {}
      await Bun.sleep(100);
    }
    const login = await fetch(`${base}/token`, {
      method: "POST",
      headers: { Authorization: `Basic ${btoa("bench:bench-password")}` },
      body: "{}",
    });
    const token = ((await login.json()) as { data: { token: string } }).data.token;
    const check = `${base}/token/${token}?scope=calld.users.me.calls.read`;
    const head = ["-s", join(import.meta.dir, "head.lua")];
    await wrk(["-t1", "-c4", "-d3s", ...head], check); // warm-up
    const quiet = await wrk(["-t1", "-c4", `-d${seconds}s`, ...head], check);
    const flood = wrk(
      ["-t1", "-c64", `-d${seconds + 2}s`, "-s", join(import.meta.dir, "random-token.lua")],
      `${base}/token/x`,
    );
    await Bun.sleep(1000);
    const during = await wrk(["-t1", "-c4", `-d${seconds}s`, ...head], check);
    const f = await flood;
    if (quiet.non2xx || during.non2xx)
      throw new Error(`a valid check failed: ${quiet.non2xx + during.non2xx} non-2xx answers`);
    return [
      `| ${kind} | valid checks alone (4 connections) | ${Math.round(quiet.rps)} | ${quiet.p50} | ${quiet.p99} |`,
      `| ${kind} | unknown-token flood (64 connections, all 404) | ${Math.round(f.rps)} | ${f.p50} | ${f.p99} |`,
      `| ${kind} | valid checks during the flood (4 connections) | ${Math.round(during.rps)} | ${during.p50} | ${during.p99} |`,
    ];
  } finally {
    service.kill("SIGTERM");
    await service.exited;
  }
}

const rows: string[] = [];
const dir = mkdtempSync(join(tmpdir(), "tessera-flood-"));
try {
  rows.push(
    ...(await measure("PGlite", {
      TESSERA_DATA_DIR: join(dir, "data"),
      TESSERA_PORT: String(port),
      TESSERA_LOG_LEVEL: "warning",
    })),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const pgBase = process.env.BENCH_DATABASE_URL;
if (pgBase) {
  const { default: postgres } = await import("postgres");
  const name = `tessera_flood_${process.pid}`;
  const admin = postgres(pgBase, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}"`);
  const url = new URL(pgBase);
  url.pathname = `/${name}`;
  try {
    rows.push(
      ...(await measure("PostgreSQL", {
        DATABASE_URL: url.toString(),
        TESSERA_PORT: String(port),
        TESSERA_LOG_LEVEL: "warning",
      })),
    );
  } finally {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
  }
}
console.log(`wrk, HEAD, loopback, ${navigator.hardwareConcurrency} cores, ${seconds} s per run\n`);
console.log("| database | load | requests/s | p50 | p99 |\n|---|---|---:|---:|---:|");
for (const r of rows) console.log(r);
