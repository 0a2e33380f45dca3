// The SCIM door's error exit: whatever failed — a refusal, a malformed filter, an outage, the
// db_timeout deadline — RFC 7644 §3.12's error body (`schemas`, `status` as a string, `scimType`
// where §3.12 names one, `detail`) as application/scim+json, never the REST body: provisioning
// clients (Entra ID, Okta) parse this one.
import type { Context } from "hono";
import type { AppContext } from "../boot/context.ts";
import { apiErrorOf } from "../http/error-response.ts";
import { ScimError, type ScimType } from "../services/scim/errors.ts";
import { ERROR_SCHEMA } from "../services/scim/schemas.ts";

export const SCIM_CONTENT_TYPE = "application/scim+json";

/** The messages of an ApiError's per-field details (`{field: {message}}`, nested), for `detail`. */
function detailMessages(details: Record<string, unknown>, prefix = ""): string[] {
  return Object.entries(details).flatMap(([k, v]) => {
    if (!v || typeof v !== "object") return [];
    const o = v as Record<string, unknown>;
    const name = prefix ? `${prefix}.${k}` : k;
    if (typeof o.message === "string") return [`${name === "_schema" ? "" : `${name}: `}${o.message}`];
    return detailMessages(o, name);
  });
}

/** What anything thrown means in SCIM: its status, headers and §3.12 body (also a Bulk operation's `response`). */
export function scimError(
  c: Context,
  err: unknown,
  app: AppContext,
): { status: number; headers: Record<string, string>; body: Record<string, unknown> } {
  const e = apiErrorOf(c, err, app.log);
  let scimType: ScimType | null = null;
  if (e instanceof ScimError) scimType = e.scimType;
  else if (e.status === 409) scimType = "uniqueness";
  else if (e.status === 400) {
    // The route pipeline's refusals: a body that is no JSON is a syntax error, a field a value's.
    const schema = e.details._schema as { constraint_id?: string } | undefined;
    scimType = e.errorId === "invalid-data" && schema?.constraint_id !== "json" ? "invalidValue" : "invalidSyntax";
  }
  let detail = e.message;
  if (!(e instanceof ScimError)) {
    const extra = detailMessages(e.details);
    const access = typeof e.details.required_access === "string" ? [`requires ${e.details.required_access}`] : [];
    if (extra.length || access.length) detail = `${detail}: ${[...extra, ...access].join("; ")}`;
  }
  const headers: Record<string, string> = { "Content-Type": SCIM_CONTENT_TYPE, ...(e.headers ?? {}) };
  if (e.status === 401) headers["WWW-Authenticate"] = 'Bearer realm="tessera-scim"';
  const body = { schemas: [ERROR_SCHEMA], status: String(e.status), ...(scimType ? { scimType } : {}), detail };
  return { status: e.status, headers, body };
}

export function scimErrorResponse(c: Context, err: unknown, app: AppContext): Response {
  const { status, headers, body } = scimError(c, err, app);
  return new Response(c.req.method === "HEAD" ? null : JSON.stringify(body), { status, headers });
}
