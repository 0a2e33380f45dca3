// The OpenID Connect provider's public documents (docs/openid-connect.md "OpenID Connect"): discovery and keys.
import { requestIssuer } from "../http/public-urls.ts";
import { RouteGroup } from "../http/route.ts";
import { protectedResourceMetadata, providerMetadata } from "../services/oidc/discovery.ts";
import { jwksDocument } from "../services/oidc/keys.ts";
import { jwksResponse } from "../http/fast-jwks.ts";

export function oidcRoutes(): RouteGroup {
  return new RouteGroup("oidc")
    .get(
      "/oidc/.well-known/openid-configuration",
      {
        summary: "OpenID Provider metadata (OIDC Discovery 1.0 §4, RFC 8414 §3)",
        operationId: "getOidcDiscovery",
        responses: { 200: "The provider metadata" },
      },
      ({ c, app }) => {
        c.header("Cache-Control", "public, max-age=300");
        return c.json(providerMetadata(requestIssuer(c, app)));
      },
    )
    .get(
      "/.well-known/oauth-protected-resource",
      {
        summary: "Protected resource metadata of this REST API (RFC 9728 §3)",
        operationId: "getProtectedResourceMetadata",
        description:
          "Also served where RFC 9728 §3.1 puts it for the resource `{public_url}/0.1`: `/.well-known/oauth-protected-resource/0.1` at the root of the host (and `/.well-known/oauth-protected-resource`).",
        responses: {
          200: "`{resource, authorization_servers, bearer_methods_supported, resource_name, resource_documentation}`",
        },
      },
      ({ c, app }) => {
        c.header("Cache-Control", "public, max-age=300");
        return c.json(protectedResourceMetadata(requestIssuer(c, app)));
      },
    )
    .get(
      "/oidc/jwks",
      {
        summary: "Public keys that sign ID tokens (RFC 7517 §5 JWK Set)",
        operationId: "getOidcJwks",
        headers: { "If-None-Match": "the ETag of a copy held: 304 when it is still the set (RFC 9110 §13.1.2)" },
        responses: { 200: "`{keys}`, with a strong ETag", 304: "Not modified", 503: "Database unavailable" },
      },
      async ({ c, app }) => jwksResponse(await jwksDocument(app), c.req.header("If-None-Match") ?? null),
    );
}
