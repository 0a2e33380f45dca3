// `npm run bench -- startup` (or `bun bench/startup.ts`): how fast and how lean the service starts,
// as `npm start` runs it (bun --max-http-header-size=65536 src/main.ts): the time from spawning to
// the first 200 of HEAD /0.1/status on an empty data directory (first start: database created and
// migrated) and on the same one again (restart), the process's peak resident memory (VmHWM, every
// thread included: PGlite's, the hashing pool's) over the first start, and its resident memory after
// 10 s idle — on PGlite and on a scratch PostgreSQL database. Each figure is the median of 3 runs.
//
// A/B on a shared machine: `BENCH_STARTUP_COMPARE=/path/to/another/checkout bun bench/startup.ts`
// starts this tree and the other one in alternation on PGlite (first start, restart, idle memory),
// `BENCH_STARTUP_RUNS` times each (default 3), and prints both medians and ranges: the machine's
// load moves both alike. (The other checkout needs its node_modules, e.g. a symlink to this one's.)
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root, scratchDatabase } from "./lib.ts";

function freePort(): number {
  const server = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}

const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 3);
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 10);

/** kB figures of /proc/PID/status (VmHWM: peak resident; VmRSS: resident now), in MiB. */
function memory(pid: number): { peak: number; rss: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? Number.NaN);
  return { peak: kb("VmHWM") / 1024, rss: kb("VmRSS") / 1024 };
}

interface StartFigures {
  ms: number;
  peak: number;
  idle: number;
}

/** Starts the service with `config`, times its first answer, samples its memory, stops it. */
async function startOnce(
  dir: string,
  config: string,
  port: number,
  idle: boolean,
  cwd: string = root,
): Promise<StartFigures> {
  writeFileSync(join(dir, "config.yml"), `rest_api: {port: ${port}}\ndata_dir: ${join(dir, "data")}\n${config}`);
  const started = performance.now();
  const proc = Bun.spawn([process.execPath, "--max-http-header-size=65536", "src/main.ts"], {
    cwd,
    env: { ...process.env, TESSERA_CONFIG: join(dir, "config.yml") },
    stdout: "ignore",
    stderr: "pipe",
  });
  let ms = Number.NaN;
  for (const until = started + 60_000; performance.now() < until; await Bun.sleep(10)) {
    const status = await fetch(`http://127.0.0.1:${port}/0.1/status`, { method: "HEAD" }).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) {
      ms = performance.now() - started;
      break;
    }
  }
  if (Number.isNaN(ms) || proc.exitCode !== null) {
    proc.kill("SIGTERM");
    throw new Error(`the service did not answer: ${await new Response(proc.stderr).text()}`);
  }
  let figures = { ms, ...memory(proc.pid) };
  if (idle) {
    await Bun.sleep(IDLE_SECONDS * 1000);
    figures = { ...figures, ...memory(proc.pid) };
  }
  proc.kill("SIGTERM");
  await proc.exited;
  void proc.stderr.cancel();
  return { ms: figures.ms, peak: figures.peak, idle: figures.rss };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** First start and restart figures on PGlite (`url` null) or PostgreSQL. */
async function measureKind(url: string | null, port: number): Promise<{ first: StartFigures; restart: StartFigures }> {
  const firsts: StartFigures[] = [];
  const restarts: StartFigures[] = [];
  for (let i = 0; i < RUNS; i++) {
    const dir = mkdtempSync(join(tmpdir(), "tessera-startup-"));
    const db = url ? await scratchDatabase() : null;
    const config = db ? `db_uri: "${db.url}"\n` : "";
    try {
      firsts.push(await startOnce(dir, config, port, true));
      restarts.push(await startOnce(dir, config, port, false));
    } finally {
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const pick = (xs: StartFigures[]): StartFigures => ({
    ms: median(xs.map((x) => x.ms)),
    peak: median(xs.map((x) => x.peak)),
    idle: median(xs.map((x) => x.idle)),
  });
  return { first: pick(firsts), restart: pick(restarts) };
}

/** The rows of docs/benchmarks.md: first start, restart, peak and idle memory per database. */
export async function startupRows(): Promise<string[]> {
  const rows: string[] = [];
  const pgAvailable = await scratchDatabase();
  await pgAvailable?.drop();
  for (const [name, url] of [
    ["PGlite", null],
    ["PostgreSQL", pgAvailable ? "yes" : null],
  ] as const) {
    if (name === "PostgreSQL" && !url) {
      rows.push("| PostgreSQL | (unreachable: skipped) | | | |");
      continue;
    }
    const { first, restart } = await measureKind(url, freePort());
    const ms = (n: number) => `${Math.round(n).toLocaleString("en")} ms`;
    const mib = (n: number) => `${Math.round(n)} MiB`;
    rows.push(`| ${name} | ${ms(first.ms)} | ${ms(restart.ms)} | ${mib(first.peak)} | ${mib(first.idle)} |`);
    console.error(rows.at(-1));
  }
  return rows;
}

export const STARTUP_HEADER =
  "| database | first start (empty) → first answer | restart → first answer | peak RSS (first start) | idle RSS (after 10 s) |\n|---|---:|---:|---:|---:|";

/** PGlite's first start, restart and idle memory of two checkouts started in alternation (A/B). */
export async function compareTrees(trees: string[], runs = RUNS): Promise<string[]> {
  const port = freePort();
  const figures = trees.map(() => ({ first: [] as number[], restart: [] as number[], idle: [] as number[] }));
  for (let i = 0; i < runs; i++) {
    // Alternate which tree goes first, so neither always follows the other's disk writes.
    const order = trees.map((_, t) => t);
    if (i % 2) order.reverse();
    for (const t of order) {
      const dir = mkdtempSync(join(tmpdir(), "tessera-startup-"));
      try {
        const first = await startOnce(dir, "", port, true, trees[t]!);
        const restart = await startOnce(dir, "", port, false, trees[t]!);
        figures[t]!.first.push(first.ms);
        figures[t]!.restart.push(restart.ms);
        figures[t]!.idle.push(first.idle);
        console.error(
          `run ${i + 1} ${trees[t]}: first ${Math.round(first.ms)} ms, restart ${Math.round(restart.ms)} ms, idle ${Math.round(first.idle)} MiB`,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  const range = (xs: number[], unit: string) =>
    `${Math.round(median(xs)).toLocaleString("en")} ${unit} (${Math.round(Math.min(...xs)).toLocaleString("en")}–${Math.round(Math.max(...xs)).toLocaleString("en")})`;
  return trees.map(
    (tree, t) =>
      `| ${tree} | ${range(figures[t]!.first, "ms")} | ${range(figures[t]!.restart, "ms")} | ${range(figures[t]!.idle, "MiB")} |`,
  );
}

if (import.meta.main) {
  const other = process.env.BENCH_STARTUP_COMPARE;
  if (other) {
    console.log(
      `| PGlite, ${RUNS} alternated runs: median (range) | first start → first answer | restart → first answer | idle RSS (after ${IDLE_SECONDS} s) |\n|---|---:|---:|---:|`,
    );
    for (const row of await compareTrees([root, other])) console.log(row);
  } else {
    console.log(STARTUP_HEADER);
    for (const row of await startupRows()) console.log(row);
  }
}
