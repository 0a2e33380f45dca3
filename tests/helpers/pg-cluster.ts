// A private PostgreSQL cluster for outage tests: initdb in a temp dir, a free port, run as the
// `postgres` OS user (initdb refuses root). Tests stop, start, freeze (SIGSTOP of the postmaster and
// every backend) and thaw it; the machine's shared server is never touched. For failover tests, a
// primary with synchronous replication (`startPgCluster({ synchronous: true })`) and a streaming
// standby made from it by pg_basebackup (`startStandby`), which the test promotes.
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface PgCluster {
  url: string;
  port: number;
  dir: string;
  start(): Promise<void>;
  /** `pg_ctl stop -m fast`: backends are terminated, clients see their connections closed. */
  stop(): Promise<void>;
  /** `pg_ctl stop -m immediate`: the server dies as in a crash (no shutdown checkpoint). */
  crash(): Promise<void>;
  /** SIGSTOP the postmaster and all its children: connections stay open, nothing answers. */
  freeze(): void;
  thaw(): void;
  destroy(): Promise<void>;
  /** `pg_ctl promote`: a standby becomes a primary (waits until it accepts writes). */
  promote(): Promise<void>;
}

export interface PgClusterOptions {
  /** Commits wait until a standby has them (synchronous_standby_names = '*'); needs a standby to commit. */
  synchronous?: boolean;
}

function binDir(): string | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], "bin") : null;
}

/** True when this machine can run a private cluster (PostgreSQL binaries and a `postgres` user). */
export const pgClusterAvailable: boolean = (() => {
  if (!binDir()) return false;
  return Bun.spawnSync(["id", "-u", "postgres"]).exitCode === 0;
})();

function asPostgres(args: string[]): string[] {
  return process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...args] : args;
}

async function run(args: string[]): Promise<void> {
  const p = Bun.spawn(asPostgres(args), { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${args.join(" ")} failed (${code}): ${out}${err}`);
}

function freePort(): number {
  const server = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}

export async function startPgCluster(opts: PgClusterOptions = {}): Promise<PgCluster> {
  const bin = binDir();
  if (!bin) throw new Error("PostgreSQL binaries not found under /usr/lib/postgresql");
  const dir = mkdtempSync(join(tmpdir(), "tessera-pg-"));
  chmodSync(dir, 0o777);
  const data = join(dir, "data");
  // initdb's pg_hba.conf trusts replication connections from 127.0.0.1 as it trusts the others.
  await run([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  const cluster = clusterAt(
    bin,
    dir,
    freePort(),
    opts.synchronous ? "-c synchronous_standby_names='*' -c synchronous_commit=on" : "",
  );
  await cluster.start();
  return cluster;
}

/** A hot standby of `primary` (pg_basebackup -R: streaming replication from it), started on a free port. */
export async function startStandby(primary: PgCluster): Promise<PgCluster> {
  const bin = binDir()!;
  const dir = mkdtempSync(join(tmpdir(), "tessera-pg-standby-"));
  chmodSync(dir, 0o777);
  await run([
    join(bin, "pg_basebackup"),
    "-D",
    join(dir, "data"),
    "-h",
    "127.0.0.1",
    "-p",
    String(primary.port),
    "-U",
    "postgres",
    "-X",
    "stream",
    "-R",
    "--no-sync",
    "-c",
    "fast",
  ]);
  const cluster = clusterAt(bin, dir, freePort(), "-c hot_standby=on");
  await cluster.start();
  return cluster;
}

function clusterAt(bin: string, dir: string, port: number, extra: string): PgCluster {
  const data = join(dir, "data");
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50 -c shared_buffers=16MB ${extra}`;
  const pgctl = (cmd: string[]) => run([join(bin, "pg_ctl"), "-D", data, "-w", "-t", "60", ...cmd]);

  const pids = (): number[] => {
    const pidFile = join(data, "postmaster.pid");
    if (!existsSync(pidFile)) return [];
    const postmaster = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
    const children = Bun.spawnSync(["pgrep", "-P", String(postmaster)])
      .stdout.toString()
      .split("\n")
      .filter(Boolean)
      .map(Number);
    return [postmaster, ...children];
  };
  const signal = (sig: NodeJS.Signals) => {
    for (const pid of pids()) {
      try {
        process.kill(pid, sig);
      } catch {}
    }
  };

  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    start: () => pgctl(["-o", opts, "-l", join(dir, "log"), "start"]),
    stop: () => pgctl(["-m", "fast", "stop"]),
    crash: () => pgctl(["-m", "immediate", "stop"]),
    freeze: () => signal("SIGSTOP"),
    thaw: () => signal("SIGCONT"),
    promote: () => pgctl(["promote"]),
    async destroy() {
      signal("SIGCONT");
      await pgctl(["-m", "immediate", "stop"]).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
