// The one error model (docs/api.md, D1 of docs/wazo-auth-differences.md): services throw ApiError subclasses; the HTTP layer
// (`http/error-response.ts`) is the only place that turns anything thrown into a response.

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
    super(
      404,
      "not-found",
      message ?? `No such ${singular(resource)}${id ? `: "${id}"` : ""}`,
      resource,
      id ? { uuid: id } : {},
      resourceId,
    );
  }
}

/** The lookup's result, or null when it is a 404: DELETE of what is absent (or unseen) is a no-op (D4 of docs/wazo-auth-differences.md). */
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

/** 401 of a login whose password was right for a user with a confirmed second factor, but no code came with it. */
/** What the login pipeline resolved before its second-factor step: the hosted login page finishes it later (web/flow/second-step.ts). */
export interface ProvenPassword {
  userUuid: string;
  login: string;
  method: string;
  backendName: string;
}

export class MfaRequired extends ApiError {
  /** Set by the login pipeline (never in the body): whose password was accepted. */
  proven?: ProvenPassword;
  /** The tenant requires a factor and the user has none: the hosted login page enrols one first. */
  enrol = false;
  /** The user must choose a new password (an administrator required it): the hosted login page asks for it. */
  changePassword = false;
  constructor(methods: string[]) {
    super(401, "mfa-required", "A second factor is required: retry with mfa_code", "tokens", { methods });
  }
}

export class UnauthorizedTenant extends ApiError {
  constructor(tenantUuid: string) {
    super(401, "unauthorized-tenant", "Unauthorized tenant", "tenants", { tenant_uuid: tenantUuid });
  }
}

export class ServiceUnavailable extends ApiError {
  constructor(resource: string, message: string, errorId = "service-unavailable", details: Details = {}) {
    super(503, errorId, message, resource, details);
  }
}

/** 503 for a feature that a missing setting turns off; `details.missing_config` names the key. */
export class MissingConfiguration extends ServiceUnavailable {
  constructor(resource: string, key: string, message: string) {
    super(resource, message, "missing-configuration", { missing_config: key });
  }
}

export class TooManySessions extends ApiError {
  constructor(userUuid: string) {
    super(429, "too-many-sessions", `User ${userUuid} has exceeded the maximum number of active sessions`, "sessions", {
      user_uuid: userUuid,
    });
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

/**
 * 429 of the per-account second-factor lock (NIST SP 800-63B §5.2.2): too many wrong codes for one
 * account, from any address. The password was proven, so saying why is no oracle.
 */
export class SecondFactorLocked extends ApiError {
  constructor(resource: string, retryAfterSeconds: number) {
    super(
      429,
      "second-factor-locked",
      "Too many wrong second-factor codes: the second factor of this account is locked until an administrator unlocks it (DELETE /0.1/users/{user_uuid}/login-failures) or retry_after seconds pass",
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

/** 503 for a database that is down, unreachable, frozen past `db_timeout`, or out of disk. */
export class DatabaseUnavailable extends ServiceUnavailable {
  constructor(resource: string, message = "The database is unavailable; retry later") {
    super(resource, message);
  }
}
