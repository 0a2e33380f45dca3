// Identity providers (wazo-auth's identity-provider API): the authentication methods, and assigning them to users.
import { z } from "zod";
import { segment } from "../domain/strings.ts";
import { RouteGroup } from "../http/route.ts";
import { uuidField, uuidParam } from "../domain/validate.ts";
import { assignIdp, authenticationMethods, unassignIdp } from "../services/auth/identity-providers.ts";

const typeAndUser = z.object({ idp_type: segment(), user_uuid: uuidParam });

export function idpRoutes(): RouteGroup {
  return new RouteGroup("idp")
    .get(
      "/idp",
      {
        operationId: "listIdps",
        summary: "Authentication methods: native, default and each loaded IdP's",
        acl: "auth.idp.read",
        responses: { 200: "`{items: [string], filtered, total}`" },
      },
      ({ c, app }) => {
        const items = authenticationMethods(app);
        return c.json({ items, filtered: items.length, total: items.length });
      },
    )
    .put(
      "/idp/{idp_type}/users",
      {
        summary: "Give several users this authentication method (all or none)",
        acl: "auth.idp.{idp_type}.users.update",
        params: z.object({ idp_type: segment() }),
        body: z.object({ users: z.array(z.object({ uuid: uuidField })) }),
        responses: { 204: "Assigned", 400: "Invalid body", 404: "No such IdP or user" },
      },
      async ({ c, app, caller, params, body }) => {
        await assignIdp(
          app,
          caller,
          params.idp_type,
          body.users.map((u) => u.uuid),
        );
        return c.body(null, 204);
      },
    )
    .put(
      "/idp/{idp_type}/users/{user_uuid}",
      {
        summary: "Give a user this authentication method",
        acl: "auth.idp.{idp_type}.users.{user_uuid}.create",
        params: typeAndUser,
        responses: { 204: "Assigned", 404: "No such IdP or user" },
      },
      async ({ c, app, caller, params }) => {
        await assignIdp(app, caller, params.idp_type, [params.user_uuid]);
        return c.body(null, 204);
      },
    )
    .delete(
      "/idp/{idp_type}/users/{user_uuid}",
      {
        summary: "Set the user back to `default` if it used this method",
        acl: "auth.idp.{idp_type}.users.{user_uuid}.delete",
        params: typeAndUser,
        responses: { 204: "Done", 404: "No such IdP or user" },
      },
      async ({ c, app, caller, params }) => {
        await unassignIdp(app, caller, params.idp_type, params.user_uuid);
        return c.body(null, 204);
      },
    );
}
