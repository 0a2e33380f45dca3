// Turns anything thrown into the one JSON error body of docs/api.md (D1 of docs/wazo-auth-differences.md): the only place where
// the domain's errors (`domain/errors.ts`) become HTTP responses.
import type { Context } from "hono";
import { databaseFailure } from "../db/failures.ts";
import { ApiError, Conflict, DatabaseUnavailable } from "../domain/errors.ts";
import { errorFields, maskPath, type Logger } from "../observe/log.ts";
import type { AppContext } from "../boot/context.ts";
import { issuerOf, protectedResourceMetadataUrl } from "../services/oidc/discovery.ts";

/** The resource name of a request path, for errors raised outside any route (404, 405, 500). */
export function resourceOfPath(path: string): string {
  const parts = path.split("/").filter(Boolean);
  const i = parts[0] === "0.1" ? 1 : 0;
  return parts[i] ?? "api";
}

export function jsonError(c: Context, err: ApiError): Response {
  const headers: Record<string, string> = { "Content-Type": "application/json", ...(err.headers ?? {}) };
  // RFC 9728 §5.1: a request without a valid token learns where this API's metadata is.
  if (err.status === 401 && err.details.reason === "not_found_or_expired") {
    const app = c.get("app") as AppContext | undefined;
    if (app) {
      const issuer = issuerOf(app, new URL(c.req.url).origin, c.req.header("X-Script-Name"));
      const resource = issuer.replace(/\/oidc$/, "");
      headers["WWW-Authenticate"] = `Bearer resource_metadata="${protectedResourceMetadataUrl(resource)}"`;
    }
  }
  const body = c.req.method === "HEAD" ? null : JSON.stringify(err.toBody());
  return new Response(body, { status: err.status, headers });
}

/**
 * Turns anything thrown into the one JSON error body; unexpected errors are logged, never shown.
 * Infrastructure failures (database down, disk full) are 503 and their cause is logged.
 */
export function errorResponse(c: Context, err: unknown, log: Logger): Response {
  return jsonError(c, apiErrorOf(c, err, log));
}

/**
 * What anything thrown means, as an ApiError, whatever door then shapes it (the REST body here,
 * OAuth's `{error}` or the error page elsewhere): the unexpected and infrastructure failures are
 * logged once, here, with their cause.
 */
export function apiErrorOf(c: Context, err: unknown, log: Logger): ApiError {
  if (err instanceof ApiError) return err;
  const failure = databaseFailure(err);
  if (failure) {
    log.error("database unavailable", {
      method: c.req.method,
      path: maskPath(c.req.path),
      code: failure.code,
      cause: failure.message,
    });
    // A write cut short (no answer in time, connection lost around the commit) has an unknown outcome.
    const write = !["GET", "HEAD", "OPTIONS"].includes(c.req.method);
    const message = write
      ? "The database is unavailable or did not answer in time; the change may or may not have been applied: read it back before retrying"
      : undefined;
    return new DatabaseUnavailable(resourceOfPath(c.req.path), message);
  }
  // A unique constraint lost to a concurrent request: the same 409 a service check would give.
  if (pgErrorCode(err) === "23505")
    return new Conflict(resourceOfPath(c.req.path), {
      constraint: { constraint_id: "unique", message: "Already exists" },
    });
  if (isHttpException(err) && err.status < 500)
    return new ApiError(err.status, "invalid-request", err.message || "Invalid request", resourceOfPath(c.req.path));
  // Never the error's own message or stack as they are: a driver's message carries the query's
  // parameters (password hashes, tokens). Class, code and a sanitised first line are enough.
  log.error("unexpected error", {
    method: c.req.method,
    path: maskPath(c.req.path),
    ...errorFields(err),
    frames: stackFrames(err),
  });
  return new ApiError(500, "internal-error", "Internal Server Error", resourceOfPath(c.req.path));
}

function pgErrorCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  const code = e?.code ?? e?.cause?.code;
  return typeof code === "string" ? code : undefined;
}

function isHttpException(err: unknown): err is { status: number; message: string } {
  return (
    typeof err === "object" &&
    err !== null &&
    "status" in err &&
    typeof (err as { status: unknown }).status === "number" &&
    "getResponse" in err
  );
}

/** Where it was thrown: the stack's frames only (its first line repeats the unsafe message). */
function stackFrames(err: unknown): string[] | undefined {
  const stack = err instanceof Error ? err.stack : undefined;
  return stack
    ?.split("\n")
    .filter((l) => /^\s+at /.test(l))
    .slice(0, 8)
    .map((l) => l.trim());
}
