// SCIM 2.0 service provider configuration endpoints (RFC 7644 §4): what the provider supports,
// its resource types and their schemas. A bearer token is required, as for the resources.
import { MAX_BODY_BYTES } from "../http/limits.ts";
import { RouteGroup } from "../http/route.ts";
import { resourceTypes, schemas, serviceProviderConfig } from "../services/scim/discovery.ts";
import { ERRORS, idParam, SCIM_HEADERS } from "./params.ts";
import { scimJson, scimScope } from "./scope.ts";

const ACCESS = "auth.scim.schemas.read";

export function scimDiscoveryRoutes(): RouteGroup {
  return new RouteGroup("scim", "scim")
    .get(
      "/scim/v2/ServiceProviderConfig",
      {
        summary: "SCIM: what the service provider supports",
        headers: SCIM_HEADERS,
        responses: { 200: "ServiceProviderConfig", ...ERRORS },
      },
      async ({ c, app }) => scimJson(serviceProviderConfig((await scimScope(c, app, ACCESS)).base, MAX_BODY_BYTES)),
    )
    .get(
      "/scim/v2/ResourceTypes",
      {
        summary: "SCIM: the resource types (User, Group)",
        headers: SCIM_HEADERS,
        responses: { 200: "ListResponse", ...ERRORS },
      },
      async ({ c, app }) => scimJson(resourceTypes((await scimScope(c, app, ACCESS)).base)),
    )
    .get(
      "/scim/v2/ResourceTypes/{id}",
      {
        summary: "SCIM: a resource type",
        headers: SCIM_HEADERS,
        params: idParam,
        responses: { 200: "ResourceType", ...ERRORS },
      },
      async ({ c, app, params }) => scimJson(resourceTypes((await scimScope(c, app, ACCESS)).base, params.id)),
    )
    .get(
      "/scim/v2/Schemas",
      {
        summary: "SCIM: the schemas (User, Enterprise User, Group)",
        headers: SCIM_HEADERS,
        responses: { 200: "ListResponse", ...ERRORS },
      },
      async ({ c, app }) => scimJson(schemas((await scimScope(c, app, ACCESS)).base)),
    )
    .get(
      "/scim/v2/Schemas/{id}",
      {
        summary: "SCIM: a schema, by its URN",
        headers: SCIM_HEADERS,
        params: idParam,
        responses: { 200: "Schema", ...ERRORS },
      },
      async ({ c, app, params }) => scimJson(schemas((await scimScope(c, app, ACCESS)).base, params.id)),
    );
}
