// SCIM 2.0 Bulk (RFC 7644 §3.7): several operations on Users and Groups in one request, each
// answered in the BulkResponse with its status (and its error body when it failed).
import { RouteGroup } from "../http/route.ts";
import { bulk } from "../services/scim/bulk.ts";
import { scimError } from "./error-response.ts";
import { ERRORS, resourceBody, SCIM_HEADERS } from "./params.ts";
import { scimJson, scimScope } from "./scope.ts";

export function scimBulkRoutes(): RouteGroup {
  return new RouteGroup("scim", "scim").post(
    "/scim/v2/Bulk",
    {
      summary: "SCIM: several Users and Groups operations, bulkId references resolved (BulkResponse)",
      description:
        "Needs `auth.scim.bulk.create`, and each operation the access of its own route. Operations are not atomic: each has its own status.",
      headers: SCIM_HEADERS,
      body: resourceBody,
      responses: { 200: "BulkResponse", 413: "More than 1000 operations", ...ERRORS },
    },
    async ({ c, app, body }) => {
      const scope = await scimScope(c, app, "auth.scim.bulk.create");
      return scimJson(
        await bulk(scope, body, (err) => {
          const { status, body } = scimError(c, err, app);
          return { status, body };
        }),
      );
    },
  );
}
