// Resource servers (docs/openid-connect.md "Resource servers and JWT access tokens"): CRUD in the
// scoping tenant, like the clients. A client names one with `resource=` at the token endpoint
// (RFC 8707) and gets a token shaped for it: an RFC 9068 JWT, or Tessera's opaque token.
import { z } from "zod";
import { listQuery } from "../domain/collection.ts";
import { CAPS, text } from "../domain/strings.ts";
import { uuidParam } from "../domain/validate.ts";
import { RouteGroup } from "../http/route.ts";
import {
  createResource,
  deleteResource,
  listResources,
  type ResourceFilter,
  requireVisibleResource,
  resourceIdentifierProblem,
  resourceJson,
  TOKEN_FORMATS,
  updateResource,
} from "../services/oidc/resources.ts";

const resourceList = listQuery<ResourceFilter>({
  order: ["identifier", "created_at", "uuid"],
  defaultOrder: "identifier",
  filters: ["identifier", "token_format"],
});
const resourceParam = z.object({ oidc_resource_uuid: uuidParam });

const identifier = text(2_048, { min: 1 }).superRefine((v, ctx) => {
  const problem = resourceIdentifierProblem(v);
  if (problem) ctx.addIssue({ code: "custom", message: problem, params: { constraint_id: "uri", constraint: "uri" } });
});

const resourceBody = z.object({
  identifier: identifier.describe("The resource's identifier (RFC 8707 §2): an absolute URI without fragment"),
  acl: z
    .array(text(CAPS.aclEntry, { min: 1 }))
    .max(256)
    .describe("The ACL patterns a token for this resource may carry (a filter of its holder's ACL)"),
  token_format: z.enum(TOKEN_FORMATS).describe("`jwt` (RFC 9068) or `opaque` (a Tessera token)"),
  access_token_lifetime: z
    .number()
    .int()
    .min(1)
    .max(86_400)
    .nullable()
    .optional()
    .describe("Seconds; at most the lifetime of the token it is issued from. Null: that lifetime"),
});

const resourceSchema = z.object({
  uuid: z.string(),
  tenant_uuid: z.string(),
  identifier: z.string(),
  acl: z.array(z.string()),
  token_format: z.enum(TOKEN_FORMATS),
  access_token_lifetime: z.number().nullable(),
  created_at: z.string(),
});

export function oidcResourceRoutes(): RouteGroup {
  return new RouteGroup("oidc_resources")
    .get(
      "/oidc/resources",
      {
        summary: "Resource servers of the scoping tenant (and below with `recurse`)",
        acl: "auth.oidc.resources.read",
        query: resourceList,
        responses: {
          200: {
            description: "`{items, filtered, total}`",
            schema: z.object({ items: z.array(resourceSchema), filtered: z.number(), total: z.number() }),
          },
          400: "Invalid list parameter",
        },
      },
      async ({ c, app, caller, query }) => c.json(await listResources(app, caller, query)),
    )
    .post(
      "/oidc/resources",
      {
        summary: "Register a resource server in the scoping tenant (RFC 8707 resource indicator, RFC 9068 tokens)",
        description:
          "A token requested with `resource=<identifier>` by a client of the tenant carries the entries of its holder's ACL that `acl` covers; `token_format: jwt` makes it an RFC 9068 JWT (`typ: at+jwt`) signed with the provider's keys.",
        acl: "auth.oidc.resources.create",
        body: resourceBody,
        responses: {
          201: { description: "The resource server", schema: resourceSchema },
          400: "Invalid body",
          409: "The identifier is already registered in the tenant",
        },
      },
      async ({ c, app, caller, body }) => c.json(await createResource(app, caller, body), 201),
    )
    .get(
      "/oidc/resources/{oidc_resource_uuid}",
      {
        summary: "A resource server",
        acl: "auth.oidc.resources.{oidc_resource_uuid}.read",
        params: resourceParam,
        responses: { 200: { description: "The resource server", schema: resourceSchema }, 404: "No such resource" },
      },
      async ({ c, app, caller, params }) =>
        c.json(resourceJson(await requireVisibleResource(app, caller, params.oidc_resource_uuid))),
    )
    .put(
      "/oidc/resources/{oidc_resource_uuid}",
      {
        summary: "Replace a resource server's settings (tokens already issued keep theirs)",
        acl: "auth.oidc.resources.{oidc_resource_uuid}.update",
        params: resourceParam,
        body: resourceBody,
        responses: {
          204: "Updated",
          400: "Invalid body",
          404: "No such resource",
          409: "The identifier is already registered in the tenant",
        },
      },
      async ({ c, app, caller, params, body }) => {
        await updateResource(app, caller, params.oidc_resource_uuid, body);
        return c.body(null, 204);
      },
    )
    .delete(
      "/oidc/resources/{oidc_resource_uuid}",
      {
        summary: "Delete a resource server (tokens already issued for it stay valid until they expire)",
        acl: "auth.oidc.resources.{oidc_resource_uuid}.delete",
        params: resourceParam,
        responses: { 204: "Deleted or absent" },
      },
      async ({ c, app, caller, params }) => {
        await deleteResource(app, caller, params.oidc_resource_uuid);
        return c.body(null, 204);
      },
    );
}
