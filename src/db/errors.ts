// Telling an infrastructure failure (the database unreachable, shutting down, out of resources)
// from a refusal: the login pipeline answers the first with 503 and never counts it as a failed
// login, whatever layer (drizzle, postgres.js, PGlite, a plugin) it surfaced through.

import { databaseFailure } from "./failures.ts";

/** The one classification of failures.ts (also behind the 503 of http/error-response.ts). */
export function isDatabaseUnavailable(err: unknown): boolean {
  return databaseFailure(err) !== null;
}
