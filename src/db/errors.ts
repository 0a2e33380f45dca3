// Telling an infrastructure failure (the database unreachable, shutting down, out of resources)
// from a refusal: the login pipeline answers the first with 503 and never counts it as a failed
// login, whatever layer (drizzle, postgres.js, PGlite, a plugin) it surfaced through.

/** postgres.js and socket codes of a connection that could not be made or was lost. */
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
]);

/** SQLSTATE classes of a server that cannot serve now: connection (08), resources (53), operator
 * intervention (57, e.g. shutdown), system (58), and transaction rollbacks (40: retry later). */
const UNAVAILABLE_SQLSTATE = /^(08|53|57|58|40)[0-9A-Z]{3}$/;

export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && (CONNECTION_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code))) return true;
    if (e instanceof Error && /PGlite is closed/i.test(e.message)) return true;
  }
  return false;
}
