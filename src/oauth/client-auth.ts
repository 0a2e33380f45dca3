// What every protocol endpoint of clients starts with: its form (strings only), the request's origin,
// and client authentication (RFC 6749 §2.3). Whatever fails is answered in the door's own error form
// (`{error, error_description}`, RFC 6749 §5.2, never the REST API's body) by the door's exit,
// http/oauth-error-response.ts, which the request deadline also answers with.
import type { Context } from "hono";
import type { AppContext } from "../boot/context.ts";
import { oauthErrorResponse } from "../http/oauth-error-response.ts";
import { requestOrigin } from "../http/request-origin.ts";
import type { Env } from "../http/route.ts";
import type { ClientRow } from "../services/oidc/clients.ts";
import type { Form, RequestOrigin } from "../services/oidc/grants.ts";
import { authenticateClient } from "../services/oidc/token-endpoint.ts";

export function formOf(body: Record<string, unknown>): Form {
  const out: Form = {};
  for (const [k, v] of Object.entries(body)) if (typeof v === "string") out[k] = v;
  return out;
}

export function originOf(c: Context<Env>, app: AppContext): RequestOrigin {
  const origin = requestOrigin(c, app.config.rest_api.trusted_proxies);
  return { userAgent: c.req.header("User-Agent") ?? "", remoteAddr: origin.address, forwarded: origin.forwarded };
}

/** Runs an endpoint of authenticated clients; anything thrown is answered by the door's exit. */
export async function asClient(
  c: Context<Env>,
  app: AppContext,
  form: Form,
  answer: (client: ClientRow) => Promise<Response>,
): Promise<Response> {
  try {
    return await answer(await authenticateClient(app, c.req.header("Authorization"), form, originOf(c, app)));
  } catch (e) {
    return oauthErrorResponse(c, e, app); // the door's one error form, as the deadline's answer
  }
}
