// Initial access tokens (RFC 7591 §3; docs/openid-connect.md "Dynamic client registration"): a tenant
// administrator issues them, and with one a client registers itself in that tenant.
import { z } from "zod";
import { listQuery } from "../domain/collection.ts";
import { uuidParam } from "../domain/validate.ts";
import { RouteGroup } from "../http/route.ts";
import { GRANT_TYPES } from "../services/oidc/grants/index.ts";
import {
  createInitialAccessToken,
  deleteInitialAccessToken,
  listInitialAccessTokens,
} from "../services/oidc/initial-access-tokens.ts";

const tokenList = listQuery<never>({ order: ["created_at", "expires_at"], defaultOrder: "created_at", filters: [] });

const createBody = z.object({
  max_uses: z.number().int().min(1).max(10_000).default(1).describe("clients it may register (default 1)"),
  expires_in: z
    .number()
    .int()
    .min(60)
    .max(31_536_000)
    .default(86_400)
    .describe("seconds it stays usable (default one day)"),
  grant_types: z
    .array(z.enum(GRANT_TYPES))
    .min(1)
    .optional()
    .describe(
      "the grant types a client registered with it may use (default authorization_code and refresh_token; never client_credentials)",
    ),
});

const tokenJson = z.object({
  uuid: z.string(),
  tenant_uuid: z.string(),
  max_uses: z.number(),
  uses: z.number(),
  grant_types: z.array(z.string()),
  expires_at: z.string(),
  created_at: z.string(),
});

export function oidcInitialAccessTokenRoutes(): RouteGroup {
  return new RouteGroup("oidc_initial_access_tokens")
    .get(
      "/oidc/initial-access-tokens",
      {
        summary: "Initial access tokens of the scoping tenant (and below with `recurse`); never the tokens themselves",
        acl: "auth.oidc.initial_access_tokens.read",
        query: tokenList,
        responses: {
          200: {
            description: "`{items, filtered, total}`",
            schema: z.object({ items: z.array(tokenJson), filtered: z.number(), total: z.number() }),
          },
          400: "Invalid list parameter",
        },
      },
      async ({ c, app, caller, query }) => c.json(await listInitialAccessTokens(app, caller, query)),
    )
    .post(
      "/oidc/initial-access-tokens",
      {
        summary:
          "Issue an initial access token: clients register themselves with it in the scoping tenant (RFC 7591 §3)",
        description:
          "The `token` is in this answer only (it is stored hashed). A client presents it as `Authorization: Bearer <token>` at the registration endpoint; each registration spends one of its `max_uses`. Clients registered with it are third-party (consent is asked), carry no ACL of their own, and use only its `grant_types`.",
        acl: "auth.oidc.initial_access_tokens.create",
        body: createBody,
        responses: {
          201: { description: "`{uuid, token, expires_at, ...}`", schema: tokenJson.extend({ token: z.string() }) },
          400: "Invalid body",
        },
      },
      async ({ c, app, caller, body }) => c.json(await createInitialAccessToken(app, caller, body), 201),
    )
    .delete(
      "/oidc/initial-access-tokens/{initial_access_token_uuid}",
      {
        summary: "Revoke an initial access token (the clients it registered stay)",
        acl: "auth.oidc.initial_access_tokens.{initial_access_token_uuid}.delete",
        params: z.object({ initial_access_token_uuid: uuidParam }),
        responses: { 204: "Revoked or absent" },
      },
      async ({ c, app, caller, params }) => {
        await deleteInitialAccessToken(app, caller, params.initial_access_token_uuid);
        return c.body(null, 204);
      },
    );
}
