// One-line JSON logs with a level threshold. Secrets never reach a log line: `maskToken` keeps only
// a token's first characters and `redact` hides known secret fields.
export type Level = "debug" | "info" | "warning" | "error" | "critical";

const RANK: Record<Level, number> = { debug: 10, info: 20, warning: 30, error: 40, critical: 50 };

export interface Logger {
  level: Level;
  /** True when a message of `level` would be written (lets hot paths skip building fields). */
  enabled(level: Level): boolean;
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export type Sink = (line: string) => void;

export function createLogger(level: Level, sink: Sink = (l) => process.stderr.write(`${l}\n`)): Logger {
  const logger: Logger = {
    level,
    enabled: (lvl) => RANK[lvl] >= RANK[logger.level],
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warning", m, f),
    error: (m, f) => write("error", m, f),
  };
  function write(lvl: Level, msg: string, fields?: Record<string, unknown>) {
    if (RANK[lvl] < RANK[logger.level]) return;
    sink(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...(fields ? redact(fields) : {}) }));
  }
  return logger;
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = createLogger("critical", () => {});

const SECRET_FIELDS = /^(password|old_password|new_password|refresh_token|token|authorization|x-auth-token|client_secret|bind_password)$/i;

export function redact(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = SECRET_FIELDS.test(k) && v != null ? "********" : v;
  return out;
}

/** `6a1c0f1e-…` → `6a1c…`: enough to correlate, useless to an attacker. */
export function maskToken(token: string | undefined | null): string {
  if (!token) return "";
  return `${token.slice(0, 4)}…`;
}

/** Masks token-shaped path segments (`/0.1/token/<uuid>`) before a path is logged. */
export function maskPath(path: string): string {
  return path.replace(/(\/token\/)([^/?]+)/i, (_m, p: string, t: string) => `${p}${maskToken(t)}`);
}
