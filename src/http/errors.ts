// The one error model (INTERFACE.md §7, D1): services throw ApiError subclasses; `errorResponse`
// is the only place that turns anything thrown into an HTTP response.
import type { Context } from "hono";
import { databaseFailure } from "../db/failures.ts";
import { errorFields, maskPath, type Logger } from "../log.ts";

export type Details = Record<string, unknown>;

export interface ErrorBody {
  error_id: string;
  message: string;
  resource: string;
  resource_id?: string | Record<string, unknown>;
  timestamp: number;
  details: Details;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errorId: string,
    message: string,
    readonly resource: string,
    readonly details: Details = {},
    readonly resourceId?: string | Record<string, unknown>,
    /** Extra response headers (429 `Retry-After`). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }

  toBody(): ErrorBody {
    const body: ErrorBody = {
      error_id: this.errorId,
      message: this.message,
      resource: this.resource,
      timestamp: Date.now() / 1000,
      details: this.details,
    };
    if (this.resourceId !== undefined) body.resource_id = this.resourceId;
    return body;
  }
}

/** 400 with per-field details `{field: {constraint_id, constraint, message}}`, nested. */
export class InvalidData extends ApiError {
  constructor(resource: string, details: Details, message = "Invalid request") {
    super(400, "invalid-data", message, resource, details);
  }
}

/** Shorthand for one invalid field. */
export function invalidField(
  resource: string,
  field: string,
  constraintId: string,
  constraint: unknown,
  message: string,
): InvalidData {
  return new InvalidData(resource, { [field]: { constraint_id: constraintId, constraint, message } });
}

export class NotFound extends ApiError {
  constructor(resource: string, resourceId?: string | Record<string, unknown>, message?: string) {
    const id = typeof resourceId === "string" ? resourceId : undefined;
    super(404, "not-found", message ?? `No such ${singular(resource)}${id ? `: "${id}"` : ""}`, resource, id ? { uuid: id } : {}, resourceId);
  }
}

/** The lookup's result, or null when it is a 404: DELETE of what is absent (or unseen) is a no-op (D4). */
export async function orAbsent<T>(lookup: Promise<T>): Promise<T | null> {
  try {
    return await lookup;
  } catch (e) {
    if (e instanceof NotFound) return null;
    throw e;
  }
}

export class Conflict extends ApiError {
  constructor(resource: string, details: Details, message = "Conflict detected", resourceId?: string) {
    super(409, "conflict", message, resource, details, resourceId);
  }
}

export class Forbidden extends ApiError {
  constructor(resource: string, message: string, details: Details = {}, errorId = "forbidden", resourceId?: string) {
    super(403, errorId, message, resource, details, resourceId);
  }
}

/** 401: missing, unknown or expired token, or failed login. */
export class Unauthorized extends ApiError {
  constructor(details: Details = {}, message = "Unauthorized", resource = "tokens", errorId = "unauthorized") {
    super(401, errorId, message, resource, details);
  }
}

export class AuthenticationFailed extends ApiError {
  constructor() {
    super(401, "authentication-failed", "Authentication Failed", "tokens");
  }
}

export class UnauthorizedTenant extends ApiError {
  constructor(tenantUuid: string) {
    super(401, "unauthorized-tenant", "Unauthorized tenant", "tenants", { tenant_uuid: tenantUuid });
  }
}

export class ServiceUnavailable extends ApiError {
  constructor(resource: string, message: string, errorId = "service-unavailable") {
    super(503, errorId, message, resource);
  }
}

export class TooManySessions extends ApiError {
  constructor(userUuid: string) {
    super(
      429,
      "too-many-sessions",
      `User ${userUuid} has exceeded the maximum number of active sessions`,
      "sessions",
      { user_uuid: userUuid },
    );
  }
}

/** 429 of login throttling: too many failures for a login or an address; `Retry-After` in seconds. */
export class TooManyRequests extends ApiError {
  constructor(resource: string, retryAfterSeconds: number) {
    super(
      429,
      "too-many-requests",
      "Too many failed attempts; retry later",
      resource,
      { retry_after: retryAfterSeconds },
      undefined,
      { "Retry-After": String(retryAfterSeconds) },
    );
  }
}

function singular(resource: string): string {
  if (resource.endsWith("ies")) return `${resource.slice(0, -3)}y`;
  return resource.endsWith("s") ? resource.slice(0, -1) : resource;
}

/** The resource name of a request path, for errors raised outside any route (404, 405, 500). */
export function resourceOfPath(path: string): string {
  const parts = path.split("/").filter(Boolean);
  const i = parts[0] === "0.1" ? 1 : 0;
  return parts[i] ?? "api";
}

export function jsonError(c: Context, err: ApiError): Response {
  const headers: Record<string, string> = { "Content-Type": "application/json", ...(err.headers ?? {}) };
  const body = c.req.method === "HEAD" ? null : JSON.stringify(err.toBody());
  return new Response(body, { status: err.status, headers });
}

/** 503 for a database that is down, unreachable, frozen past `db_timeout`, or out of disk. */
export class DatabaseUnavailable extends ServiceUnavailable {
  constructor(resource: string, message = "The database is unavailable; retry later") {
    super(resource, message);
  }
}

/**
 * Turns anything thrown into the one JSON error body; unexpected errors are logged, never shown.
 * Infrastructure failures (database down, disk full) are 503 and their cause is logged.
 */
export function errorResponse(c: Context, err: unknown, log: Logger): Response {
  if (err instanceof ApiError) return jsonError(c, err);
  const failure = databaseFailure(err);
  if (failure) {
    log.error("database unavailable", { method: c.req.method, path: maskPath(c.req.path), code: failure.code, cause: failure.message });
    // A write cut short (no answer in time, connection lost around the commit) has an unknown outcome.
    const write = !["GET", "HEAD", "OPTIONS"].includes(c.req.method);
    const message = write
      ? "The database is unavailable or did not answer in time; the change may or may not have been applied: read it back before retrying"
      : undefined;
    return jsonError(c, new DatabaseUnavailable(resourceOfPath(c.req.path), message));
  }
  // A unique constraint lost to a concurrent request: the same 409 a service check would give.
  if (pgErrorCode(err) === "23505") {
    return jsonError(c, new Conflict(resourceOfPath(c.req.path), { constraint: { constraint_id: "unique", message: "Already exists" } }));
  }
  if (isHttpException(err) && err.status < 500) {
    return jsonError(c, new ApiError(err.status, "invalid-request", err.message || "Invalid request", resourceOfPath(c.req.path)));
  }
  // Never the error's own message or stack as they are: a driver's message carries the query's
  // parameters (password hashes, tokens). Class, code and a sanitised first line are enough.
  log.error("unexpected error", { method: c.req.method, path: maskPath(c.req.path), ...errorFields(err), frames: stackFrames(err) });
  return jsonError(c, new ApiError(500, "internal-error", "Internal Server Error", resourceOfPath(c.req.path)));
}

function pgErrorCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  const code = e?.code ?? e?.cause?.code;
  return typeof code === "string" ? code : undefined;
}

function isHttpException(err: unknown): err is { status: number; message: string } {
  return typeof err === "object" && err !== null && "status" in err && typeof (err as { status: unknown }).status === "number" && "getResponse" in err;
}

/** Where it was thrown: the stack's frames only (its first line repeats the unsafe message). */
function stackFrames(err: unknown): string[] | undefined {
  const stack = err instanceof Error ? err.stack : undefined;
  return stack?.split("\n").filter((l) => /^\s+at /.test(l)).slice(0, 8).map((l) => l.trim());
}
