// The token endpoint (RFC 6749 §3.2, OIDC Core §3.1.3) with the grants of the registry
// (services/oidc/grants/index.ts), device authorization (RFC 8628 §3.1), introspection (RFC 7662),
// revocation (RFC 7009) and userinfo (OIDC Core §5.3). Their errors are OAuth's (`{error,
// error_description}`, RFC 6749 §5.2; RFC 6750 §3 for userinfo), the answers OAuth clients parse.
import { z } from "zod";
import type { Context } from "hono";
import type { AppContext } from "../boot/context.ts";
import { type Env, RouteGroup } from "../http/route.ts";
import { findValidToken, isTokenShaped } from "../services/auth/tokens.ts";
import { grantOfToken } from "../services/oidc/grants.ts";
import { invalidClient, OAuthError } from "../services/oidc/oauth-error.ts";
import type { Form } from "../services/oidc/grants.ts";
import { GRANT_TYPES, grantOf } from "../services/oidc/grants/index.ts";
import { startDeviceAuthorization } from "../services/oidc/device.ts";
import { introspectToken, revokeClientToken } from "../services/oidc/introspection.ts";
import { userClaims } from "../services/oidc/claims.ts";
import { requestIssuer } from "../http/public-urls.ts";
import { answerAbandoned } from "../http/deadline.ts";
import { asClient, formOf, originOf } from "./client-auth.ts";
import {
  bindIssuedTokens,
  checkPresentedBindings,
  checkRefreshBinding,
  bindingRefusal,
  DPOP_SIGNING_ALGS,
  DpopError,
  dpopChallenge,
  type PresentedToken,
  presentedToken,
  tokenRequestProof,
} from "../services/oidc/dpop.ts";
import { resolveAccessJwt, resourceTarget, shapeForResource } from "../services/oidc/access-jwt.ts";

/** The form a grant's handler sees: the parameters it declares (RFC 6749 §4: each grant's own). */
function grantForm(form: Form, parameters: readonly string[]): Form {
  const out: Form = {};
  for (const name of parameters) if (form[name] !== undefined) out[name] = form[name];
  return out;
}

/**
 * The `resource` parameter (RFC 8707 §2): the parsed form keeps one value of a repeated field, so a
 * request naming several is told by the raw body (read only when the form has a resource).
 */
async function resourcesOf(c: Context<Env>, body: Record<string, unknown>): Promise<unknown> {
  if (body.resource === undefined) return undefined;
  const type = c.req.header("Content-Type") ?? "";
  if (!/^application\/x-www-form-urlencoded/i.test(type)) return body.resource;
  const all = new URLSearchParams(await c.req.text()).getAll("resource");
  return all.length > 1 ? all : body.resource;
}

const formSchema = z.record(z.string(), z.unknown());
const CLIENT_AUTH = {
  Authorization: "client_secret_basic: Basic base64(urlencoded client_id:urlencoded client_secret)",
};

export function oidcTokenRoutes(): RouteGroup {
  return new RouteGroup("oidc", "oauth")
    .post(
      "/oidc/token",
      {
        summary:
          "Token endpoint: authorization code (with PKCE), refresh token, client credentials and device code grants; the access token is a Tessera token",
        operationId: "createOidcToken",
        bodyType: "form",
        body: formSchema,
        headers: CLIENT_AUTH,
        responses: {
          200: "`{access_token, token_type, expires_in, scope}`, with `id_token` and `refresh_token` when the grant gives them; with `resource` naming a `jwt` resource server (RFC 8707), the access token is an RFC 9068 JWT",
          400: "`{error, error_description}` (RFC 6749 §5.2; RFC 8628 §3.5 while a device code waits; RFC 8707 §2 `invalid_target`)",
          401: "`invalid_client`, with WWW-Authenticate",
          429: "`temporarily_unavailable`: too many failed logins from this address; `access_denied`: the user is at the session cap",
          503: "`temporarily_unavailable` (database outage)",
        },
      },
      async ({ c, app, body }) => {
        const form = formOf(body);
        return asClient(c, app, form, async (client) => {
          const grant = grantOf(form.grant_type ?? "");
          if (!grant) throw new OAuthError(400, "unsupported_grant_type", `supported: ${GRANT_TYPES.join(", ")}`);
          if (!client.grantTypes.includes(grant.type))
            throw new OAuthError(400, "unauthorized_client", "this client may not use this grant type");
          const issuer = requestIssuer(c, app);
          // RFC 9449 §5: a DPoP proof binds what is issued; checked before the grant spends anything.
          const proof = await dpopChecked(c, () =>
            tokenRequestProof(app, client, c.req.header("DPoP"), `${issuer}/token`),
          );
          if (grant.type === "refresh_token") await checkRefreshBinding(app, form.refresh_token, proof);
          if (grant.parameters.includes("subject_token"))
            await checkPresentedBindings(
              app,
              { subject_token: form.subject_token, actor_token: form.actor_token },
              proof,
            );
          // RFC 8707 §2: the resource is decided before the grant runs (a refused one spends nothing).
          // RFC 8693 §2.1: a grant reading `audience` (token exchange) may name the resource by it.
          const named = body.resource ?? (grant.parameters.includes("audience") ? body.audience : undefined);
          // RFC 8707 §2.1: a code's authorization request may have indicated the resource already.
          const authorized = (await grant.authorizedResource?.(app, client, form)) ?? null;
          const requested = await resourcesOf(c, { resource: named });
          const target = await resourceTarget(app, client, requested, issuer, authorized);
          const granted = await grant.handle(app, client, grantForm(form, grant.parameters), {
            issuer,
            origin: originOf(c, app),
            abandoned: () => answerAbandoned(c.req.raw),
          });
          const bound = proof ? await bindIssuedTokens(app, client, granted, proof.jkt) : granted;
          const answer = target ? await shapeForResource(app, client, bound, target, issuer) : bound;
          c.header("Cache-Control", "no-store");
          c.header("Pragma", "no-cache");
          return c.json(answer);
        });
      },
    )
    .post(
      "/oidc/device_authorization",
      {
        summary:
          "Device authorization endpoint (RFC 8628 §3.1): a device code to poll the token endpoint with, and a user code to type on the verification page",
        operationId: "createOidcDeviceAuthorization",
        bodyType: "form",
        body: formSchema,
        headers: CLIENT_AUTH,
        responses: {
          200: "`{device_code, user_code, verification_uri, verification_uri_complete, expires_in, interval}`",
          400: "`{error, error_description}`: `unauthorized_client`, `invalid_scope`",
          401: "`invalid_client`, with WWW-Authenticate",
          503: "`temporarily_unavailable`",
        },
      },
      async ({ c, app, body }) => {
        const form = formOf(body);
        return asClient(c, app, form, async (client) => {
          const answer = await startDeviceAuthorization(app, client, form, requestIssuer(c, app));
          c.header("Cache-Control", "no-store");
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
        description:
          "RFC 7662 §4: a `first_party` client learns of every token of its tenant and sub-tenants; any other client only of the access tokens issued to it. Both, of their own refresh tokens. Anything else is `{active: false}`, as an unknown token.",
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
          return c.json(await introspectToken(app, client, form.token, requestIssuer(c, app), form.token_type_hint));
        });
      },
    )
    .post(
      "/oidc/revoke",
      {
        summary:
          "Token revocation (RFC 7009): a client revokes an access token issued to it (its session ends) or a refresh token (its whole grant ends)",
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
          await revokeClientToken(app, client, form.token, form.token_type_hint, originOf(c, app));
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
      ({ c, app }) => userinfo(c, app, presentedToken(c.req.header("Authorization"))),
    )
    .post(
      "/oidc/userinfo",
      {
        summary: "UserInfo endpoint by POST (OIDC Core §5.3.1): the access token in the header or the form body",
        operationId: "postOidcUserinfo",
        description:
          "`Authorization: Bearer <token>` (RFC 6750 §2.1) or a form body `access_token=<token>` (§2.2), not both (§2: one method per request).",
        bodyType: "form",
        body: formSchema,
        headers: { Authorization: "Bearer <access token>" },
        responses: {
          200: "The claims",
          400: "`invalid_request`: the token sent twice",
          401: "`invalid_token` (RFC 6750 §3.1)",
          503: "Database unavailable",
        },
      },
      ({ c, app, body }) => {
        const header = c.req.header("Authorization");
        const form = formOf(body).access_token;
        if (header !== undefined && form !== undefined)
          return c.json({ error: "invalid_request", error_description: "send the access token one way only" }, 400);
        return userinfo(c, app, form !== undefined ? { scheme: "bearer", token: form } : presentedToken(header));
      },
    );
}

/** A DPoP check whose refusal is the door's OAuth error (RFC 9449 §7; §8: with the nonce to retry with). */
async function dpopChecked<T>(c: Context<Env>, check: () => Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (e) {
    if (!(e instanceof DpopError)) throw e;
    throw new OAuthError(400, e.error, e.message, e.nonce ? { "DPoP-Nonce": e.nonce } : undefined);
  }
}

/** OIDC Core §5.3: the claims the access token's grant allows, or RFC 6750 §3.1's refusal. */
async function userinfo(c: Context<Env>, app: AppContext, presented: PresentedToken | undefined): Promise<Response> {
  const refuse = () => {
    const dpop = presented?.scheme === "dpop";
    c.header(
      "WWW-Authenticate",
      dpop ? dpopChallenge({ error: "invalid_token", description: "" }) : `Bearer error="invalid_token"`,
    );
    return c.json({ error: "invalid_token", error_description: "the access token is invalid or expired" }, 401);
  };
  if (!presented) {
    c.header("WWW-Authenticate", 'Bearer realm="tessera"');
    c.header("WWW-Authenticate", `DPoP algs="${DPOP_SIGNING_ALGS.join(" ")}"`, { append: true });
    return c.json({ error: "invalid_request", error_description: "a Bearer access token is required" }, 401);
  }
  const bearer = presented.token;
  // An RFC 9068 JWT stands for the Tessera token it was issued from (access-jwt.ts).
  const uuid = isTokenShaped(bearer) ? bearer : ((await resolveAccessJwt(app, bearer))?.anchorUuid ?? null);
  const token = uuid ? await findValidToken(app, uuid) : null;
  const grant = token && uuid ? await grantOfToken(app, uuid, token) : null;
  if (!token || !grant?.userUuid) return refuse();
  // RFC 9449 §7: a DPoP-bound token only with a proof of its key (a bearer token: one field test).
  if (grant.jkt || presented.scheme === "dpop") {
    const refusal = await bindingRefusal(app, grant.jkt, presented, c.req.header("DPoP"), {
      method: c.req.method,
      url: `${requestIssuer(c, app)}/userinfo`,
    });
    if (refusal) {
      if (refusal.nonce) c.header("DPoP-Nonce", refusal.nonce);
      c.header("WWW-Authenticate", dpopChallenge(refusal));
      return c.json({ error: refusal.error, error_description: refusal.description }, 401);
    }
  }
  const claims = await userClaims(app, grant.userUuid, grant.scope);
  if (!claims) return refuse();
  c.header("Cache-Control", "no-store");
  return c.json(claims);
}
