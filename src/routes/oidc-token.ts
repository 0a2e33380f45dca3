// The token endpoint (RFC 6749 §3.2, OIDC Core §3.1.3) and userinfo (OIDC Core §5.3). Their
// errors are OAuth's (`{error, error_description}`, RFC 6749 §5.2; RFC 6750 §3 for userinfo),
// the answers OAuth clients parse.
import type { Context } from "hono";
import { z } from "zod";
import { databaseFailure } from "../db/failures.ts";
import { RouteGroup, type Env } from "../http/route.ts";
import { findValidToken, isTokenShaped } from "../services/auth/tokens.ts";
import { grantOfToken } from "../services/oidc/userinfo.ts";
import { invalidClient, OAuthError } from "../services/oidc/oauth-error.ts";
import { authenticateClient, exchangeAuthorizationCode, type Form } from "../services/oidc/token-endpoint.ts";
import { introspectToken, revokeClientToken } from "../services/oidc/introspection.ts";
import type { ClientRow } from "../services/oidc/clients.ts";
import type { AppContext } from "../context.ts";
import { userClaims } from "../services/oidc/claims.ts";
import { requestIssuer } from "./oidc.ts";

function oauthError(c: Context<Env>, e: OAuthError): Response {
  // RFC 6749 §5.2: 401 invalid_client carries the scheme the client tried (Basic).
  if (e.status === 401) c.header("WWW-Authenticate", 'Basic realm="tessera", charset="UTF-8"');
  c.header("Cache-Control", "no-store");
  return c.json({ error: e.error, error_description: e.description }, e.status);
}

function formOf(body: Record<string, unknown>): Form {
  const out: Form = {};
  for (const [k, v] of Object.entries(body)) if (typeof v === "string") out[k] = v;
  return out;
}

const SUPPORTED_GRANTS = ["authorization_code"];

/** Runs an endpoint of authenticated clients, answering OAuth errors (RFC 6749 §5.2) and outages (503). */
async function asClient(
  c: Context<Env>,
  app: AppContext,
  form: Form,
  answer: (client: ClientRow) => Promise<Response>,
): Promise<Response> {
  try {
    return await answer(await authenticateClient(app, c.req.header("Authorization"), form));
  } catch (e) {
    if (e instanceof OAuthError) return oauthError(c, e);
    if (databaseFailure(e)) return oauthError(c, new OAuthError(503, "temporarily_unavailable", "try again later"));
    throw e;
  }
}

const formSchema = z.record(z.string(), z.unknown());
const CLIENT_AUTH = {
  Authorization: "client_secret_basic: Basic base64(urlencoded client_id:urlencoded client_secret)",
};

export function oidcTokenRoutes(): RouteGroup {
  return new RouteGroup("oidc")
    .post(
      "/oidc/token",
      {
        summary:
          "Token endpoint: exchanges an authorization code (with PKCE) for an access token (a Tessera token) and an ID token",
        operationId: "createOidcToken",
        bodyType: "form",
        body: formSchema,
        headers: CLIENT_AUTH,
        responses: {
          200: "`{access_token, token_type, expires_in, id_token, scope}`",
          400: "`{error, error_description}` (RFC 6749 §5.2)",
          401: "`invalid_client`, with WWW-Authenticate",
          503: "`temporarily_unavailable` (database outage)",
        },
      },
      async ({ c, app, body }) => {
        const form = formOf(body);
        return asClient(c, app, form, async (client) => {
          const grant = form.grant_type ?? "";
          if (!SUPPORTED_GRANTS.includes(grant))
            throw new OAuthError(400, "unsupported_grant_type", "supported: authorization_code");
          if (!client.grantTypes.includes(grant))
            throw new OAuthError(400, "unauthorized_client", "this client may not use this grant type");
          const answer = await exchangeAuthorizationCode(app, client, form, requestIssuer(c, app));
          c.header("Cache-Control", "no-store");
          c.header("Pragma", "no-cache");
          return c.json(answer);
        });
      },
    )
    .post(
      "/oidc/introspect",
      {
        summary:
          "Token introspection (RFC 7662): is a token (an OIDC access token or any Tessera token) active, and whose",
        operationId: "introspectOidcToken",
        bodyType: "form",
        body: formSchema,
        headers: CLIENT_AUTH,
        responses: {
          200: "`{active, sub, exp, iat, iss, scope, client_id, tenant_uuid, session_uuid}`, or `{active: false}`",
          401: "`invalid_client`, with WWW-Authenticate",
          503: "`temporarily_unavailable`",
        },
      },
      async ({ c, app, body }) => {
        const form = formOf(body);
        return asClient(c, app, form, async (client) => {
          // RFC 7662 §2.1: the caller must authenticate; a public client has nothing to authenticate with.
          if (client.clientType === "public") throw invalidClient();
          if (!form.token) throw new OAuthError(400, "invalid_request", "token is required");
          c.header("Cache-Control", "no-store");
          return c.json(await introspectToken(app, client, form.token, requestIssuer(c, app)));
        });
      },
    )
    .post(
      "/oidc/revoke",
      {
        summary: "Token revocation (RFC 7009): a client revokes an access token issued to it (its session ends)",
        operationId: "revokeOidcToken",
        bodyType: "form",
        body: formSchema,
        headers: CLIENT_AUTH,
        responses: {
          200: "Revoked, or nothing to revoke (the same answer)",
          401: "`invalid_client`",
          503: "`temporarily_unavailable`",
        },
      },
      async ({ c, app, body }) => {
        const form = formOf(body);
        return asClient(c, app, form, async (client) => {
          if (!form.token) throw new OAuthError(400, "invalid_request", "token is required");
          await revokeClientToken(app, client, form.token);
          return c.body(null, 200);
        });
      },
    )
    .get(
      "/oidc/userinfo",
      {
        summary: "UserInfo endpoint: claims about the signed-in user, by granted scope (OIDC Core §5.3)",
        operationId: "getOidcUserinfo",
        headers: { Authorization: "Bearer <access token>" },
        responses: { 200: "The claims", 401: "`invalid_token` (RFC 6750 §3.1)", 503: "Database unavailable" },
      },
      async ({ c, app }) => {
        const bearer = /^bearer\s+(\S+)$/i.exec(c.req.header("Authorization") ?? "")?.[1];
        const refuse = () => {
          c.header("WWW-Authenticate", `Bearer error="invalid_token"`);
          return c.json({ error: "invalid_token", error_description: "the access token is invalid or expired" }, 401);
        };
        if (!bearer) {
          c.header("WWW-Authenticate", 'Bearer realm="tessera"');
          return c.json({ error: "invalid_request", error_description: "a Bearer access token is required" }, 401);
        }
        const token = isTokenShaped(bearer) ? await findValidToken(app, bearer) : null;
        const grant = token ? await grantOfToken(app, bearer) : null;
        if (!token || !grant) return refuse();
        const claims = await userClaims(app, grant.userUuid, grant.scope);
        if (!claims) return refuse();
        c.header("Cache-Control", "no-store");
        return c.json(claims);
      },
    );
}
