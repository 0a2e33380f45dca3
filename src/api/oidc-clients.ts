// OpenID Connect clients (docs/openid-connect.md "OpenID Connect"): CRUD in the scoping tenant, like groups.
import { z } from "zod";
import { listQuery } from "../domain/collection.ts";
import { RouteGroup } from "../http/route.ts";
import { CAPS, text } from "../domain/strings.ts";
import { uuidParam } from "../domain/validate.ts";
import {
  clientJson,
  createClient,
  deleteClient,
  listClients,
  requireVisibleClient,
  updateClient,
  type ClientFilter,
} from "../services/oidc/clients.ts";
import { GRANT_TYPES } from "../services/oidc/grants/index.ts";
import { redirectUriProblem } from "../services/oidc/redirect-uris.ts";
import { RETIRED_KEY_PUBLISHED_SECONDS, SIGNING_ALGS } from "../services/oidc/keys.ts";
import { LOGOUT_URI_MAX } from "../services/oidc/logout-metadata.ts";

const clientList = listQuery<ClientFilter>({
  order: ["name", "created_at", "client_id"],
  defaultOrder: "name",
  filters: ["client_id", "name", "client_type"],
});
const clientParam = z.object({ oidc_client_id: uuidParam });

/** An absolute URI without fragment (RFC 6749 §3.1.2), matched later character for character. */
const redirectUri = text(2_048, { min: 1 }).superRefine((v, ctx) => {
  const problem = redirectUriProblem(v);
  if (problem)
    ctx.addIssue({
      code: "custom",
      message: problem.message,
      params: { constraint_id: "uri", constraint: problem.constraint },
    });
});

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const scopeToken = z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/);
const lifetime = (max: number) => z.number().int().min(1).max(max).nullable().optional();

const clientFields = {
  name: text(CAPS.shortName, { min: 1 }),
  redirect_uris: z.array(redirectUri).max(32).default([]),
  post_logout_redirect_uris: z.array(redirectUri).max(32).default([]),
  grant_types: z.array(z.enum(GRANT_TYPES)).min(1).optional(),
  scopes: z.array(scopeToken).max(64).optional(),
  first_party: z.boolean().default(false),
  // RFC 6749 §3.1.2.1: plain http redirect URIs off loopback, for development only (absent on PUT: kept).
  allow_insecure_redirects: z
    .boolean()
    .optional()
    .describe(
      "Development only: allow plain http redirect URIs off 127.0.0.1 and [::1] (RFC 6749 §3.1.2.1). Default false; absent on PUT: unchanged.",
    ),
  id_token_signed_response_alg: z.enum(SIGNING_ALGS).optional(),
  access_token_lifetime: lifetime(2_147_483_647),
  // An ID token outlives no key that may sign it (see keys.ts).
  id_token_lifetime: lifetime(RETIRED_KEY_PUBLISHED_SECONDS),
  refresh_token_lifetime: lifetime(2_147_483_647),
  // The ACL of the client's own tokens (client credentials): entries the caller may grant (else 403).
  acl: z
    .array(text(CAPS.aclEntry, { min: 1 }))
    .max(256)
    .optional(),
  // OpenID Connect Back-Channel Logout 1.0 §2.2 and Front-Channel Logout 1.0 §2 (services/oidc/logout-metadata.ts
  // checks them: outbound_http, no fragment, the front-channel URI on a redirect URI's origin). Absent on PUT: kept.
  backchannel_logout_uri: z
    .string()
    .max(LOGOUT_URI_MAX)
    .nullable()
    .optional()
    .describe(
      "Where a logout token is POSTed when a session that gave this client tokens ends (Back-Channel Logout 1.0 §2.2). https (plain http only with outbound_http.allow_http); private, loopback and link-local addresses only where outbound_http.allow_private_targets admits them; no fragment. null removes it; absent on PUT: unchanged.",
    ),
  backchannel_logout_session_required: z
    .boolean()
    .optional()
    .describe("The client needs `sid` in logout tokens (§2.2). Default false; absent on PUT: unchanged."),
  frontchannel_logout_uri: z
    .string()
    .max(LOGOUT_URI_MAX)
    .nullable()
    .optional()
    .describe(
      "Framed on the signed-out page after an RP-initiated logout (Front-Channel Logout 1.0 §2); on the scheme, host and port of a redirect URI. null removes it; absent on PUT: unchanged.",
    ),
  frontchannel_logout_session_required: z
    .boolean()
    .optional()
    .describe("The front-channel URI receives `iss` and `sid` (§2). Default false; absent on PUT: unchanged."),
  require_pushed_authorization_requests: z
    .boolean()
    .optional()
    .describe(
      "RFC 9126 §6: the authorization endpoint accepts only pushed requests. Default false; absent on PUT: unchanged.",
    ),
  dpop_bound_access_tokens: z
    .boolean()
    .optional()
    .describe(
      "RFC 9449 §5.2: the token endpoint issues this client DPoP-bound access tokens only (a token request without a DPoP proof is refused). Default false; absent on PUT: unchanged.",
    ),
  jwks: z
    .object({ keys: z.array(z.record(z.string(), z.unknown())).min(1).max(16) })
    .nullable()
    .optional()
    .describe("Public keys that sign the client's request objects (RFC 9101). Absent on PUT with jwks_uri: unchanged."),
  jwks_uri: text(2_048, { min: 1 })
    .nullable()
    .optional()
    .describe("Or the URL of that JWK Set, fetched through the outbound guard (`outbound_http`)."),
};
const createBody = z.object({ ...clientFields, client_type: z.enum(["confidential", "public"]) });
const updateBody = z.object(clientFields);

export function oidcClientRoutes(): RouteGroup {
  return new RouteGroup("oidc_clients")
    .get(
      "/oidc/clients",
      {
        summary: "OpenID Connect clients of the scoping tenant (and below with `recurse`)",
        acl: "auth.oidc.clients.read",
        query: clientList,
        responses: { 200: "`{items, filtered, total}`", 400: "Invalid list parameter" },
      },
      async ({ c, app, caller, query }) => c.json(await listClients(app, caller, query)),
    )
    .post(
      "/oidc/clients",
      {
        summary: "Register an OpenID Connect client in the scoping tenant",
        description:
          "A confidential client's `client_secret` is in this answer only (it is stored hashed). Public clients must use PKCE S256. `grant_types` defaults to authorization_code and refresh_token. Redirect URIs are compared exactly (a loopback `http://127.0.0.1` or `http://[::1]` one matches any port, RFC 8252 §7.3); no fragment, user information, wildcard or empty host; plain http elsewhere needs `allow_insecure_redirects`. `acl` is the ACL of the client's own tokens (client credentials grant): the caller may only give entries it could grant itself (403 otherwise).",
        acl: "auth.oidc.clients.create",
        body: createBody,
        responses: {
          201: "The client, with `client_secret` for a confidential client",
          400: "Invalid body",
          403: "An `acl` entry the caller could not grant",
        },
      },
      async ({ c, app, caller, body }) => c.json(await createClient(app, caller, body), 201),
    )
    .get(
      "/oidc/clients/{oidc_client_id}",
      {
        summary: "An OpenID Connect client (never its secret)",
        acl: "auth.oidc.clients.{oidc_client_id}.read",
        params: clientParam,
        responses: { 200: "The client", 404: "No such client" },
      },
      async ({ c, app, caller, params }) =>
        c.json(clientJson(await requireVisibleClient(app, caller, params.oidc_client_id))),
    )
    .put(
      "/oidc/clients/{oidc_client_id}",
      {
        summary: "Replace an OpenID Connect client's settings (its type and secret stay)",
        acl: "auth.oidc.clients.{oidc_client_id}.update",
        params: clientParam,
        body: updateBody,
        responses: {
          204: "Updated",
          400: "Invalid body",
          403: "An `acl` entry added or removed that the caller could not grant",
          404: "No such client",
        },
      },
      async ({ c, app, caller, params, body }) => {
        await updateClient(app, caller, params.oidc_client_id, body);
        return c.body(null, 204);
      },
    )
    .delete(
      "/oidc/clients/{oidc_client_id}",
      {
        summary: "Delete an OpenID Connect client",
        acl: "auth.oidc.clients.{oidc_client_id}.delete",
        params: clientParam,
        responses: { 204: "Deleted or absent" },
      },
      async ({ c, app, caller, params }) => {
        await deleteClient(app, caller, params.oidc_client_id);
        return c.body(null, 204);
      },
    );
}
