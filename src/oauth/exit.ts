// The protocol endpoints' own exit: OAuth's error answer (`{error, error_description}`, RFC 6749 §5.2,
// never the REST API's error body), and the client authentication every endpoint of clients starts
// with (RFC 6749 §2.3). A route of this door throws OAuthError; `asClient` answers it, and turns an
// outage into `temporarily_unavailable` (503).
import type { Context } from "hono";
import type { AppContext } from "../boot/context.ts";
import { databaseFailure } from "../db/failures.ts";
import { ApiError } from "../domain/errors.ts";
import { requestOrigin } from "../http/request-origin.ts";
import type { Env } from "../http/route.ts";
import type { ClientRow } from "../services/oidc/clients.ts";
import type { Form, RequestOrigin } from "../services/oidc/grants.ts";
import { OAuthError } from "../services/oidc/oauth-error.ts";
import { authenticateClient } from "../services/oidc/token-endpoint.ts";

export function oauthError(c: Context<Env>, e: OAuthError): Response {
  // RFC 6749 §5.2: 401 invalid_client carries the scheme the client tried (Basic).
  if (e.status === 401) c.header("WWW-Authenticate", 'Basic realm="tessera", charset="UTF-8"');
  c.header("Cache-Control", "no-store");
  return c.json({ error: e.error, error_description: e.description }, e.status);
}

export function formOf(body: Record<string, unknown>): Form {
  const out: Form = {};
  for (const [k, v] of Object.entries(body)) if (typeof v === "string") out[k] = v;
  return out;
}

export function originOf(c: Context<Env>, app: AppContext): RequestOrigin {
  const origin = requestOrigin(c, app.config.rest_api.trusted_proxies);
  return { userAgent: c.req.header("User-Agent") ?? "", remoteAddr: origin.address, forwarded: origin.forwarded };
}

/** Runs an endpoint of authenticated clients, answering OAuth errors (RFC 6749 §5.2) and outages (503). */
export async function asClient(
  c: Context<Env>,
  app: AppContext,
  form: Form,
  answer: (client: ClientRow) => Promise<Response>,
): Promise<Response> {
  try {
    return await answer(await authenticateClient(app, c.req.header("Authorization"), form, originOf(c, app)));
  } catch (e) {
    if (e instanceof OAuthError) return oauthError(c, e);
    if (e instanceof ApiError && e.status >= 500)
      return oauthError(c, new OAuthError(503, "temporarily_unavailable", "try again later"));
    if (databaseFailure(e)) return oauthError(c, new OAuthError(503, "temporarily_unavailable", "try again later"));
    throw e;
  }
}
