// Token check, read and revoke (wazo-auth's token check, read and revoke). No authentication besides knowing the
// token. POST /0.1/token (login) lives in api/login.ts.
import { z } from "zod";
import { RouteGroup } from "../http/route.ts";
import { requestOrigin } from "../http/request-origin.ts";
import { CAPS, text } from "../domain/strings.ts";
import { uuidParam } from "../domain/validate.ts";
import type { AppContext } from "../boot/context.ts";
import {
  canonicalTokenId,
  checkToken,
  checkTokenTenant,
  findValidToken,
  isTokenShaped,
  tokenJson,
} from "../services/auth/tokens.ts";
import { checkJwtToken, looksLikeJwt, resolveAccessJwt } from "../services/oidc/access-jwt.ts";
import { revokeToken } from "../services/auth/sessions.ts";
import { ApiError, NotFound } from "../domain/errors.ts";
import type { Context } from "hono";
import type { Env } from "../http/route.ts";
import { requestIssuer } from "../http/public-urls.ts";
import type { CachedToken } from "../services/auth/token-cache.ts";
import { bindingRefusal, dpopChallenge, presentedToken } from "../services/oidc/dpop.ts";

/** A Tessera token (a UUID), or an RFC 9068 JWT access token of the provider (services/oidc/access-jwt.ts). */
const anyToken = z.union([uuidParam, z.string().refine(looksLikeJwt)]);
const tokenParams = z.object({ token: uuidParam });
const checkParams = z.object({ token: anyToken });

/** The check of either kind of token; the JWT branch only after a cheap shape test failed for a UUID. */
const checkAny = (app: AppContext, token: string, scope?: string, tenant?: string) =>
  isTokenShaped(token) ? checkToken(app, token, scope, tenant) : checkJwtToken(app, token, scope, tenant);

/**
 * RFC 9449 §7: a DPoP-bound token is checked only with `Authorization: DPoP <token>` and a proof of
 * its key for this very request (`htm`/`htu` of the check, `ath` of the token); as a bearer token it
 * is refused (no downgrade). A bearer token pays one field test.
 */
async function checkBinding(c: Context<Env>, app: AppContext, token: string, tok: CachedToken): Promise<void> {
  if (tok.dpopJkt === null) return;
  const presented = presentedToken(c.req.header("Authorization"));
  // `token` is the path's, lower-cased (uuidParam): a Tessera token is the same whatever the case of its
  // hex digits (canonicalTokenId), a JWT only as it is written.
  const same =
    presented !== undefined &&
    (isTokenShaped(token) ? canonicalTokenId(presented.token) === token : presented.token === token);
  const refusal = same
    ? await bindingRefusal(app, tok.dpopJkt, presented, c.req.header("DPoP"), {
        method: c.req.method,
        // §4.3 step 9: `htu` is the URL the client addressed, so the path's token as it was sent.
        url: `${requestIssuer(c, app).replace(/\/oidc$/, "")}/token/${c.req.param("token") ?? token}`,
      })
    : { error: "invalid_token" as const, description: "the token is DPoP-bound: present it with a DPoP proof" };
  if (!refusal) return;
  const headers: Record<string, string> = { "WWW-Authenticate": dpopChallenge(refusal) };
  if (refusal.nonce) headers["DPoP-Nonce"] = refusal.nonce;
  throw new ApiError(401, refusal.error.replaceAll("_", "-"), refusal.description, "tokens", {}, undefined, headers);
}
const checkQuery = z.object({ scope: text(CAPS.queryValue).optional(), tenant: text(CAPS.queryValue).optional() });

export function tokenRoutes(): RouteGroup {
  return new RouteGroup("tokens")
    .head(
      "/token/{token}",
      {
        summary:
          "Check a token (the hot path of the platform): 204 valid, 403 scope or tenant refused, 404 unknown or expired",
        description:
          "`{token}` is a Tessera token or an RFC 9068 JWT access token of the provider (checked against the ACL it carries; 404 once revoked).",
        params: checkParams,
        query: checkQuery,
        responses: {
          204: "Valid",
          401: "A DPoP-bound token (RFC 9449) without `Authorization: DPoP <token>` and a proof of its key for this request",
          403: "Scope or tenant not granted",
          404: "No such token",
        },
      },
      async ({ c, app, params, query }) => {
        await checkBinding(c, app, params.token, await checkAny(app, params.token, query.scope, query.tenant));
        return c.body(null, 204);
      },
    )
    .get(
      "/token/{token}",
      {
        summary: "Read a token, optionally checking a scope and a tenant",
        description: "`{token}` may be an RFC 9068 JWT access token of the provider: its ACL and expiry are the JWT's.",
        params: checkParams,
        query: checkQuery,
        responses: {
          200: "The token as `{data}`",
          401: "A DPoP-bound token (RFC 9449) without `Authorization: DPoP <token>` and a proof of its key for this request",
          403: "Scope or tenant not granted",
          404: "No such token",
        },
      },
      async ({ c, app, params, query }) => {
        const tok = await checkAny(app, params.token, query.scope, query.tenant);
        await checkBinding(c, app, params.token, tok);
        return c.json({ data: tokenJson(tok) });
      },
    )
    .delete(
      "/token/{token}",
      {
        operationId: "revokeToken",
        summary: "Revoke a token (and its session when it was the last token of it); always succeeds",
        description: "An RFC 9068 JWT access token of the provider revokes the token it stands for.",
        params: checkParams,
        responses: { 200: "`{data: {message: success}}`" },
      },
      async ({ c, app, params }) => {
        const uuid = isTokenShaped(params.token)
          ? params.token
          : ((await resolveAccessJwt(app, params.token))?.anchorUuid ?? null);
        if (uuid)
          await revokeToken(app, uuid, {
            address: requestOrigin(c, app.config.rest_api.trusted_proxies).address,
            userAgent: c.req.header("User-Agent") ?? "",
          });
        return c.json({ data: { message: "success" } });
      },
    )
    .post(
      "/token/{token}/scopes/check",
      {
        summary: "Check several scopes at once: `{scopes: {<scope>: bool}}`",
        params: tokenParams,
        body: z.object({
          scopes: z.array(text(CAPS.queryValue)),
          tenant_uuid: text(CAPS.shortName).nullable().optional(),
        }),
        responses: {
          200: "Per-scope result",
          400: "Invalid body",
          401: "A DPoP-bound token (RFC 9449) without `Authorization: DPoP <token>` and a proof of its key for this request",
          403: "Tenant not granted",
          404: "No such token",
        },
      },
      async ({ c, app, params, body }) => {
        const tok = await findValidToken(app, params.token);
        if (!tok) throw new NotFound("tokens", undefined, "No such token");
        await checkBinding(c, app, params.token, tok);
        if (body.tenant_uuid) await checkTokenTenant(app, tok, body.tenant_uuid);
        const scopes: Record<string, boolean> = {};
        for (const scope of body.scopes) scopes[scope] = tok.matcher.matches(scope);
        return c.json({ scopes });
      },
    );
}
