// `workers: N` (PostgreSQL only): N processes serve the same port (SO_REUSEPORT, the kernel spreads
// connections), each a complete instance with its own caches, kept coherent like separate hosts
// are: revocations and tenant changes reach every process through LISTEN/NOTIFY. This primary
// process serves nothing itself: it applies the migrations once, starts the workers one after the
// other (start-up work such as policy synchronisation never races), restarts a worker that dies,
// and passes SIGTERM/SIGINT (drain and stop) and SIGHUP (reopen the log file) on to them. Workers
// stop when their primary dies; a primary starts none while the port is taken (main.ts checks it
// first: orphans of a previous primary still serving it make the start fail, never share the port).
import type { Subprocess } from "bun";
import type { Config } from "../config/config.ts";
import { openDatabase } from "../db/index.ts";
import type { Logger } from "../observe/log.ts";

const WORKER_ENV = "TESSERA_WORKER";
const RESTART_DELAY_MS = 1000;
const PARENT_POLL_MS = 500;

/** Whether this process is the primary of several workers (else it serves by itself). */
export function isPrimary(config: Config, log: Logger): boolean {
  if (process.env[WORKER_ENV] || config.workers <= 1) return false;
  if (!config.db_uri) {
    log.warn("workers ignored: the embedded database (PGlite) belongs to one process; set db_uri to use several", {
      workers: config.workers,
    });
    return false;
  }
  return true;
}

/** Whether this process is a worker started by a primary (which checked the port). */
export const isWorker = (): boolean => Boolean(process.env[WORKER_ENV]);

/**
 * Tells the primary this worker is listening (no-op when not started by one), and from then on
 * watches it: a worker whose primary died (kill -9, out of memory) stops as on SIGTERM — draining
 * what it serves — instead of serving unsupervised, old code and configuration, beside the next
 * primary's workers. Two signs, either suffices: the IPC channel closes (at once, the primary's end
 * of the socket pair is closed by the kernel), and the parent pid changes (re-parented; polled, in
 * case the channel is not seen closing).
 */
export function announceReady(): void {
  if (!process.env[WORKER_ENV]) return;
  process.send?.("ready");
  const primary = process.ppid;
  let orphaned = false;
  const stop = () => {
    if (orphaned) return;
    orphaned = true;
    clearInterval(poll);
    console.error(
      JSON.stringify({
        time: new Date().toISOString(),
        level: "error",
        msg: "the primary process is gone; this worker stops",
        worker: process.env[WORKER_ENV],
        primary,
      }),
    );
    process.kill(process.pid, "SIGTERM");
  };
  process.on("disconnect", stop);
  const poll = setInterval(() => process.ppid !== primary && stop(), PARENT_POLL_MS);
  poll.unref?.();
}

export async function runPrimary(config: Config, log: Logger): Promise<void> {
  // Migrations once, before any worker opens the database.
  try {
    const database = await openDatabase({ url: config.db_uri, poolSize: 1 });
    await database.close();
  } catch (e) {
    log.error("cannot open the database", { error: (e as Error).message });
    process.exit(1);
  }

  const workers = new Map<number, Subprocess>();
  let stopping = false;

  const start = (id: number): Promise<void> =>
    new Promise((ready) => {
      // execArgv too: the runtime flags of `npm start` (--max-http-header-size) hold in every worker.
      const proc = Bun.spawn([process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
        env: { ...process.env, [WORKER_ENV]: String(id) },
        stdio: ["ignore", "inherit", "inherit"],
        ipc: (message) => {
          if (message === "ready") ready();
        },
        onExit: (_p, code, signal) => {
          workers.delete(id);
          ready(); // a worker that died while starting must not block the others
          if (stopping) return;
          log.error("worker exited; restarting it", { worker: id, code, signal });
          setTimeout(() => !stopping && void start(id), RESTART_DELAY_MS);
        },
      });
      workers.set(id, proc);
    });

  // Signals are handled from the start: a stop during start-up must not orphan a worker.
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    const running = [...workers.values()];
    for (const w of running) w.kill(signal);
    await Promise.all(running.map((w) => w.exited));
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  // Only workers writing to a file handle SIGHUP (without a handler it would end them).
  if (config.log_filename) {
    process.on("SIGHUP", () => {
      for (const w of workers.values()) w.kill("SIGHUP");
    });
  }

  for (let id = 1; id <= config.workers && !stopping; id++) await start(id);
  log.info("workers started", { workers: config.workers, pid: process.pid });
}
