// The SCIM tokens of a tenant (docs/scim.md): the bearer tokens its directory (Entra ID, Okta)
// provisions with. Administered here, in the REST API; used only by the SCIM door (src/scim/).
// And whether a user is managed by the directory, for the console.
import { z } from "zod";
import { RouteGroup } from "../http/route.ts";
import { CAPS, text } from "../domain/strings.ts";
import { uuidParam } from "../domain/validate.ts";
import { createScimToken, listScimTokens, revokeScimToken } from "../services/scim/tokens.ts";
import { directoryState } from "../services/scim/users.ts";

const tokenJson = z.object({
  uuid: z.string(),
  name: z.string(),
  tenant_uuid: z.string(),
  acl: z.array(z.string()),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
});

export function scimTokenRoutes(): RouteGroup {
  return new RouteGroup("scim_tokens")
    .post(
      "/scim/tokens",
      {
        summary: "Create a SCIM token for the scoping tenant's directory; the token is shown in this answer only",
        acl: "auth.scim_tokens.create",
        body: z.object({
          name: text(CAPS.shortName, { min: 1 }),
          acl: z
            .array(text(CAPS.shortName, { min: 1 }))
            .max(100)
            .optional()
            .describe("What the token may do (default auth.scim.#); the caller must be able to grant each entry"),
        }),
        responses: {
          201: { description: "The token, with its secret `token`", schema: tokenJson.extend({ token: z.string() }) },
          400: "Invalid body",
          403: "An entry of `acl` the caller could not grant",
        },
      },
      async ({ c, app, caller, body }) => c.json(await createScimToken(app, caller, body), 201),
    )
    .get(
      "/scim/tokens",
      {
        summary: "The SCIM tokens of the scoping tenant (never their secrets)",
        acl: "auth.scim_tokens.read",
        responses: { 200: { description: "`{items}`", schema: z.object({ items: z.array(tokenJson) }) } },
      },
      async ({ c, app, caller }) => c.json({ items: await listScimTokens(app, caller) }),
    )
    .delete(
      "/scim/tokens/{scim_token_uuid}",
      {
        summary: "Revoke a SCIM token: the directory's next request is refused",
        acl: "auth.scim_tokens.{scim_token_uuid}.delete",
        params: z.object({ scim_token_uuid: uuidParam }),
        responses: { 204: "Revoked or absent" },
      },
      async ({ c, app, caller, params }) => {
        await revokeScimToken(app, caller, params.scim_token_uuid);
        return c.body(null, 204);
      },
    );
}

/** GET /users/{u}/scim: whether the tenant's directory manages a user (the console warns before an edit). */
export function userDirectoryRoutes(): RouteGroup {
  return new RouteGroup("users").get(
    "/users/{user_uuid}/scim",
    {
      operationId: "getUserDirectoryState",
      summary: "Whether a user is managed by its tenant's directory through SCIM (docs/scim.md)",
      acl: "auth.users.{user_uuid}.scim.read",
      params: z.object({ user_uuid: uuidParam }),
      responses: {
        200: {
          description: "`managed`: created or last written by SCIM; its `external_id` and when SCIM last wrote it",
          schema: z.object({
            managed: z.boolean(),
            external_id: z.string().nullable(),
            updated_at: z.string().nullable(),
          }),
        },
        404: "No such user",
      },
    },
    async ({ c, app, caller, params }) => c.json(await directoryState(app, caller, params.user_uuid)),
  );
}
