// What is checked before the service opens anything, and how a failed start ends: one log line
// and an exit code a supervisor or a script can tell apart, never a stack trace.
import type { Config } from "../config/config.ts";

/** Exit codes of a start that fails: 1 anything else (database, plugins), 2 configuration, 4 port. */
export const START_EXIT = { failed: 1, config: 2, port: 4 } as const;

/**
 * Why `host:port` cannot be listened on, or null when it can. Tried before the database is opened
 * (a first start creates and migrates it: seconds spent for nothing when the port is taken).
 */
export function listenProblem(host: string, port: number | null, what: string): string | null {
  if (!port) return null; // 0: any free port; null: off
  try {
    Bun.listen({ hostname: host, port, socket: { data() {} } }).stop(true);
    return null;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const setting = what === "rest_api" ? "rest_api.port or TESSERA_PORT" : "metrics.port or TESSERA_METRICS_PORT";
    if (code === "EADDRINUSE")
      return `cannot listen on ${host}:${port} (${what}): the port is in use by another process; stop it or set ${setting}`;
    if (code === "EACCES")
      return `cannot listen on ${host}:${port} (${what}): permission denied (ports below 1024 need privileges); set ${setting}`;
    if (code === "EADDRNOTAVAIL")
      return `cannot listen on ${host}:${port} (${what}): no such local address; set ${what}.listen`;
    return `cannot listen on ${host}:${port} (${what}): ${code ?? (e as Error).message}`;
  }
}

/** The first problem with the ports of `config` (the API, then the metrics listener). */
export function portProblem(config: Config): string | null {
  return (
    listenProblem(config.rest_api.listen, config.rest_api.port, "rest_api") ??
    listenProblem(config.metrics.listen, config.metrics.port, "metrics")
  );
}

/** An error's message without its stack, for the one line a failed start prints. */
export const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));
