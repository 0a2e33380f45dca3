// Which errors mean "the database is unavailable" (down, unreachable, frozen, out of disk) rather
// than "this request is wrong": those become a 503 and are logged with their cause. Driver errors
// arrive wrapped (drizzle's DrizzleQueryError carries the SQL and its parameters in its message:
// never log that message, only the innermost cause's code and text).

import { sanitizeMessage } from "../observe/log.ts";

/** Node/Bun socket and file-system codes, and postgres.js's own connection codes. */
const UNAVAILABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENOSPC",
  "EDQUOT",
  "EROFS",
  "EIO",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "DATABASE_TIMEOUT",
  "CIRCUIT_OPEN",
]);

/**
 * SQLSTATEs of a server that cannot serve now: class 08 (connection exception), 53 (insufficient
 * resources: 53100 disk_full, 53200 out_of_memory, 53300 too_many_connections), 57 (operator
 * intervention: 57P01 admin_shutdown, 57P03 cannot_connect_now, 57014 query_canceled), 58 (system:
 * 58030 io_error), 40 (transaction rollback: serialization failure, deadlock; retry later), and
 * 25006 below.
 */
function unavailableSqlState(code: string): boolean {
  return /^(08|53|57|58|40)[0-9A-Z]{3}$/.test(code) || code === READ_ONLY_SQL_TRANSACTION;
}

/**
 * 25006: a write reached a server that is read-only — a standby during a failover (before its
 * promotion, or a connection opened to it then). The primary is elsewhere or coming: retry later.
 */
const READ_ONLY_SQL_TRANSACTION = "25006";

/** Text that betrays a full disk or a broken database even without a code (PGlite, file systems). */
const UNAVAILABLE_TEXT =
  /no space left on device|disk full|ENOSPC|read-only file system|PGlite is closed|PGlite failed to initialize|database system is (shutting down|starting up|in recovery)/i;

export interface FailureCause {
  code: string | null;
  /** The cause's own message, cut short; never a query or its parameters. */
  message: string;
}

/** An error that means the database cannot serve requests now. */
export class DatabaseUnavailableError extends Error {
  constructor(override readonly cause: FailureCause) {
    super(`database unavailable: ${cause.code ?? ""} ${cause.message}`.trim());
    this.name = "DatabaseUnavailableError";
  }
}

function chain(err: unknown): unknown[] {
  const out: unknown[] = [];
  let current: unknown = err;
  for (let i = 0; i < 5 && current != null && !out.includes(current); i++) {
    out.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  return out;
}

/** PGlite's file system (Emscripten) throws `ErrnoError {errno}` with its own numbering. */
const EMSCRIPTEN_ERRNO: Record<number, string> = {
  2: "EACCES",
  19: "EDQUOT",
  29: "EIO",
  44: "ENOENT",
  51: "ENOSPC",
  69: "EROFS",
};

const codeOf = (e: unknown): string | null => {
  const err = e as { code?: unknown; name?: unknown; errno?: unknown } | null;
  if (typeof err?.code === "string") return err.code;
  if (err?.name === "ErrnoError" && typeof err.errno === "number")
    return EMSCRIPTEN_ERRNO[err.errno] ?? `errno ${err.errno}`;
  return null;
};

const messageOf = (e: unknown): string => {
  const err = e as { message?: unknown; name?: unknown } | null;
  if (typeof err?.message === "string" && err.message) return err.message;
  const code = codeOf(e);
  if (code) return `${typeof err?.name === "string" ? err.name : "error"} ${code}`;
  return String(e);
};

/** The cause to log when `err` means the database is unavailable; null for any other error. */
export function databaseFailure(err: unknown): FailureCause | null {
  if (err instanceof DatabaseUnavailableError) return err.cause;
  for (const e of chain(err)) {
    const code = codeOf(e);
    const own = e instanceof Error && e.name === "DrizzleQueryError" ? "" : messageOf(e);
    if ((code && (UNAVAILABLE_CODES.has(code) || unavailableSqlState(code))) || UNAVAILABLE_TEXT.test(own)) {
      return { code, message: sanitize(own) };
    }
  }
  return null;
}

/** The innermost cause of any error, safe to log: code and message, without SQL parameters. */
export function describeCause(err: unknown): FailureCause {
  const all = chain(err);
  const inner = all[all.length - 1];
  const code = all.map(codeOf).find((c) => c !== null) ?? null;
  const own = inner instanceof Error && inner.name === "DrizzleQueryError" ? "failed query" : messageOf(inner);
  return { code, message: sanitize(own) };
}

/** One sanitiser for every logged error message (src/observe/log.ts): quoted values never reach a log. */
const sanitize = sanitizeMessage;
