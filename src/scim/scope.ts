// What every SCIM route needs before its service: the caller from the bearer token — a SCIM token
// of a tenant, or any Tessera access token (an OAuth client-credentials token included) — holding
// the route's `auth.scim.*` access, acting in the token's own tenant (no Wazo-Tenant: a
// directory provisions the tenant it was connected to); and the base URL of `meta.location`.
import type { Context } from "hono";
import type { AppContext } from "../boot/context.ts";
import { requestToken, resolveCaller } from "../http/auth.ts";
import { requestIssuer } from "../http/public-urls.ts";
import { requestOrigin } from "../http/request-origin.ts";
import type { Env } from "../http/route.ts";
import type { Caller } from "../domain/caller.ts";
import { orAbsent } from "../domain/errors.ts";
import { findValidToken } from "../services/auth/tokens.ts";
import { ScimError } from "../services/scim/errors.ts";
import { NO_ME } from "../services/scim/me.ts";
import { scimTokenCaller } from "../services/scim/tokens.ts";
import type { ScimScope } from "../services/scim/users.ts";
import { SCIM_CONTENT_TYPE } from "./error-response.ts";

export async function scimScope(c: Context<Env>, app: AppContext, access: string): Promise<ScimScope> {
  return scopeOf(c, app, access, () => {});
}

/**
 * `/Me`'s scope (RFC 7644 §3.11): a bearer that is no user's (a SCIM token, a client-credentials
 * token) is answered 501 before its access is looked at — /Me has no resource for it.
 */
export async function scimMeScope(c: Context<Env>, app: AppContext, access: string): Promise<ScimScope> {
  return scopeOf(c, app, access, (caller) => {
    if (!caller.userUuid) throw new ScimError(501, null, NO_ME);
  });
}

async function scopeOf(
  c: Context<Env>,
  app: AppContext,
  access: string,
  check: (caller: Caller) => void,
): Promise<ScimScope> {
  const bearer = requestToken(c);
  let caller: Caller | null = bearer ? await scimTokenCaller(app, bearer) : null;
  if (!caller && bearer) {
    const tok = await findValidToken(app, bearer);
    // A token whose user is gone authenticates nobody: 401, not the REST API's 404.
    if (tok) caller = await orAbsent(resolveCaller(app, tok, undefined));
  }
  if (!caller) throw new ScimError(401, null, "A valid bearer token is required");
  check(caller);
  if (!caller.tenantUuid || !caller.token.matcher.matches(access))
    throw new ScimError(403, null, `The token does not hold ${access}`);
  caller.origin = {
    address: requestOrigin(c, app.config.rest_api.trusted_proxies).address,
    userAgent: c.req.header("User-Agent") ?? "",
  };
  return { app, caller, base: requestIssuer(c, app).replace(/\/oidc$/, "/scim/v2") };
}

/** A SCIM answer: application/scim+json, with the resource's version as its ETag (§3.14). */
export function scimJson(body: Record<string, unknown>, status: 200 | 201 = 200): Response {
  const headers: Record<string, string> = { "Content-Type": SCIM_CONTENT_TYPE };
  const meta = body.meta as { version?: unknown; location?: unknown } | undefined;
  if (typeof meta?.version === "string") headers.ETag = meta.version;
  if (status === 201 && typeof meta?.location === "string") headers.Location = meta.location;
  return new Response(JSON.stringify(body), { status, headers });
}
