// For tests (and scripts/chaos.ts) that start the real process (or the single executable): start it
// with a configuration and collect its log, wait for its liveness probe, build Basic credentials the
// way an HTTP client does (UTF-8), and look at the processes it started.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Polls `HEAD {base}/status` until it answers 200 or `seconds` pass; true when the service is up. */
export async function waitForService(base: string, seconds: number): Promise<boolean> {
  for (const until = Date.now() + seconds * 1000; Date.now() < until; ) {
    try {
      if ((await fetch(`${base}/status`, { method: "HEAD" })).status === 200) return true;
    } catch {
      // not listening yet
    }
    await Bun.sleep(100);
  }
  return false;
}

/** `Authorization: Basic …` for a login and password, encoded as UTF-8. */
export const basicAuth = (login: string, password: string) => ({
  Authorization: `Basic ${Buffer.from(`${login}:${password}`, "utf8").toString("base64")}`,
});

/** A TCP port free on 127.0.0.1 now (taken and released), for a process a test starts. */
export function freePort(): number {
  const server = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}

export interface ServiceProcess {
  proc: import("bun").Subprocess<"ignore", "pipe", "pipe">;
  port: number;
  base: string;
  /** Everything the process logged so far (stdout and stderr, one JSON line each). */
  log(): string;
  /** Waits for exit up to `ms`; the exit code, or null if still running (then killed with SIGKILL). */
  exitWithin(ms: number): Promise<number | null>;
}

/**
 * Starts `src/main.ts` with `configYaml` (plus `rest_api.port`) in `dir`, its output collected.
 * The caller waits for it (waitForService) and stops it.
 */
export function spawnService(dir: string, configYaml: string, env: Record<string, string> = {}): ServiceProcess {
  const port = freePort();
  const file = join(dir, `config-${port}.yml`);
  writeFileSync(file, `${configYaml}\nrest_api: {listen: 127.0.0.1, port: ${port}}\n`);
  const root = join(import.meta.dir, "..", "..");
  const proc = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: root,
    env: { ...process.env, TESSERA_CONFIG: file, TESSERA_DATA_DIR: join(dir, "data"), ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let text = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  };
  void collect(proc.stdout);
  void collect(proc.stderr);
  return {
    proc,
    port,
    base: `http://127.0.0.1:${port}/0.1`,
    log: () => text,
    async exitWithin(ms) {
      const code = await Promise.race([proc.exited, Bun.sleep(ms).then(() => null)]);
      if (code === null) proc.kill("SIGKILL");
      return code;
    },
  };
}

/** The pids of `pid`'s children (Linux /proc). */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Running (a zombie, exited but not yet reaped by its new parent, counts as gone). */
export function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}
