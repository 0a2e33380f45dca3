// Dynamic Client Registration (RFC 7591) and its management (RFC 7592), and pushed authorization
// requests (RFC 9126): the protocol endpoints of clients that register themselves and push their
// requests (docs/openid-connect.md "Dynamic client registration", "Pushed authorization requests").
// Errors are OAuth's `{error, error_description}` (RFC 7591 §3.2.2, RFC 6750 §3.1, RFC 9126 §2.3).
import { z } from "zod";
import { requestIssuer } from "../http/public-urls.ts";
import { RouteGroup } from "../http/route.ts";
import { pushAuthorizationRequest } from "../services/oidc/authorize.ts";
import {
  deleteRegistration,
  readRegistration,
  registerClient,
  updateRegistration,
} from "../services/oidc/registration.ts";
import { asClient, formOf, originOf } from "./client-auth.ts";

// Any JSON: RFC 7591 §3.2.2 errors (after the token check) come from the service, not the pipeline.
const metadata = z.unknown();
const clientParam = z.object({ client_id: z.string().max(64) });
const BEARER = (what: string) => ({ Authorization: `Bearer <${what}>` });
const registrationAnswer = z
  .object({
    client_id: z.string(),
    client_secret: z.string().optional(),
    client_id_issued_at: z.number(),
    client_secret_expires_at: z.number().optional(),
    registration_access_token: z.string().optional(),
    registration_client_uri: z.string(),
    client_name: z.string(),
    redirect_uris: z.array(z.string()),
    grant_types: z.array(z.string()),
    response_types: z.array(z.string()),
    token_endpoint_auth_method: z.string(),
    scope: z.string(),
  })
  .passthrough();

export function oidcRegistrationRoutes(): RouteGroup {
  return new RouteGroup("oidc", "oauth")
    .post(
      "/oidc/register",
      {
        summary: "Dynamic client registration (RFC 7591 §3): a client registers itself with an initial access token",
        operationId: "registerOidcClient",
        description:
          "Open registration is off: `Authorization: Bearer <initial access token>` (issued by `POST /0.1/oidc/initial-access-tokens`) decides the tenant and the grant types allowed. The client is third-party (consent is asked) and has no ACL. The answer holds `client_secret` (confidential clients), `registration_access_token` and `registration_client_uri` (RFC 7592), once.",
        body: metadata,
        headers: BEARER("initial access token"),
        responses: {
          201: {
            description: "The registered metadata with the credentials (RFC 7591 §3.2.1)",
            schema: registrationAnswer,
          },
          400: "`invalid_redirect_uri` or `invalid_client_metadata` (RFC 7591 §3.2.2)",
          401: "`invalid_token`: no initial access token, or one unknown, expired or used up",
          503: "`temporarily_unavailable`",
        },
      },
      async ({ c, app, body }) => {
        const answer = await registerClient(
          app,
          c.req.header("Authorization"),
          body,
          requestIssuer(c, app),
          originOf(c, app),
        );
        c.header("Cache-Control", "no-store");
        return c.json(answer, 201);
      },
    )
    .get(
      "/oidc/register/{client_id}",
      {
        summary: "A self-registered client reads its registration (RFC 7592 §2.1)",
        operationId: "readOidcClientRegistration",
        params: clientParam,
        headers: BEARER("registration access token"),
        responses: {
          200: { description: "The registered metadata (never the secret)", schema: registrationAnswer },
          401: "`invalid_token`",
        },
      },
      async ({ c, app, params }) => {
        c.header("Cache-Control", "no-store");
        return c.json(
          await readRegistration(app, params.client_id, c.req.header("Authorization"), requestIssuer(c, app)),
        );
      },
    )
    .put(
      "/oidc/register/{client_id}",
      {
        summary: "A self-registered client replaces its metadata (RFC 7592 §2.2)",
        operationId: "updateOidcClientRegistration",
        description:
          "The body carries `client_id`; fields left out take their defaults. The client type cannot change.",
        params: clientParam,
        body: metadata,
        headers: BEARER("registration access token"),
        responses: {
          200: { description: "The registered metadata", schema: registrationAnswer },
          400: "`invalid_request`, `invalid_redirect_uri` or `invalid_client_metadata`",
          401: "`invalid_token`",
        },
      },
      async ({ c, app, params, body }) => {
        const answer = await updateRegistration(
          app,
          params.client_id,
          c.req.header("Authorization"),
          body,
          requestIssuer(c, app),
          originOf(c, app),
        );
        c.header("Cache-Control", "no-store");
        return c.json(answer);
      },
    )
    .delete(
      "/oidc/register/{client_id}",
      {
        summary: "A self-registered client deregisters (RFC 7592 §2.3): its tokens and grants end with it",
        operationId: "deleteOidcClientRegistration",
        params: clientParam,
        headers: BEARER("registration access token"),
        responses: { 204: "Deleted", 401: "`invalid_token` (also once deleted)" },
      },
      async ({ c, app, params }) => {
        await deleteRegistration(app, params.client_id, c.req.header("Authorization"), originOf(c, app));
        return c.body(null, 204);
      },
    )
    .post(
      "/oidc/par",
      {
        summary: "Pushed authorization request endpoint (RFC 9126 §2): a request_uri for the authorization endpoint",
        operationId: "pushOidcAuthorizationRequest",
        description:
          "The client authenticates as at the token endpoint and posts the authorization request's parameters (or a signed `request` object, RFC 9101), checked as the authorization endpoint checks them. The `request_uri` is bound to the client, valid `expires_in` seconds until a browser opens it, and gives one code.",
        bodyType: "form",
        body: z.record(z.string(), z.unknown()),
        headers: { Authorization: "client_secret_basic: Basic base64(client_id:client_secret)" },
        responses: {
          201: {
            description: "`{request_uri, expires_in}`",
            schema: z.object({ request_uri: z.string(), expires_in: z.number() }),
          },
          400: "`{error, error_description}`: `invalid_request`, `invalid_scope`, `invalid_request_object`, `request_not_supported`…",
          401: "`invalid_client`",
          503: "`temporarily_unavailable`",
        },
      },
      async ({ c, app, body }) => {
        const form = formOf(body);
        return asClient(c, app, form, async (client) => {
          const answer = await pushAuthorizationRequest(app, client, form, requestIssuer(c, app));
          c.header("Cache-Control", "no-store");
          return c.json(answer, 201);
        });
      },
    );
}
