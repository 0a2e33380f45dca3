// The OAuth door's error exit (token, device authorization, introspection, revocation, userinfo):
// whatever failed, RFC 6749 §5.2's `{error, error_description}` that OAuth clients parse, never
// the REST body — a refusal the grant decided, an outage, or the db_timeout deadline alike.
import type { Context } from "hono";
import type { AppContext } from "../boot/context.ts";
import { OAuthError } from "../services/oidc/oauth-error.ts";
import { apiErrorOf } from "./error-response.ts";

/** An outage or the deadline: RFC 6749 §4.1.2.1's `temporarily_unavailable`, which §5.2 clients also read. */
export const TEMPORARILY_UNAVAILABLE = "the service cannot answer now (database unavailable); try again later";

export function oauthErrorResponse(c: Context, err: unknown, app: AppContext): Response {
  const e = asOAuthError(c, err, app);
  const headers: Record<string, string> = {
    ...e.headers,
    "Content-Type": "application/json",
    "Cache-Control": "no-store",
  };
  // RFC 6749 §5.2: 401 invalid_client carries the scheme the client tried (Basic).
  if (e.status === 401)
    headers["WWW-Authenticate"] =
      // RFC 6750 §3: a refused Bearer token (the registration endpoints, RFC 7591 §3, RFC 7592 §2).
      e.error === "invalid_token"
        ? 'Bearer realm="tessera", error="invalid_token"'
        : 'Basic realm="tessera", charset="UTF-8"';
  return new Response(JSON.stringify({ error: e.error, error_description: e.description }), {
    status: e.status,
    headers,
  });
}

function asOAuthError(c: Context, err: unknown, app: AppContext): OAuthError {
  if (err instanceof OAuthError) return err;
  const api = apiErrorOf(c, err, app.log);
  if (api.status === 503) return new OAuthError(503, "temporarily_unavailable", TEMPORARILY_UNAVAILABLE);
  if (api.status >= 500) return new OAuthError(500, "server_error", "internal error");
  if (api.status === 401) return new OAuthError(401, "invalid_client", "client authentication failed");
  if (api.status === 429) return new OAuthError(429, "temporarily_unavailable", api.message);
  // What the route pipeline refuses before the grant runs (not a form, a NUL, too large).
  return new OAuthError(api.status === 413 ? 413 : 400, "invalid_request", api.message);
}
