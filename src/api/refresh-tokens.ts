// Refresh tokens (wazo-auth's refresh-token API). The `/users/me/...` routes come first: `me` is not a uuid.
import { z } from "zod";
import { listQuery } from "../domain/collection.ts";
import { segment } from "../domain/strings.ts";
import { RouteGroup } from "../http/route.ts";
import { uuidParam } from "../domain/validate.ts";
import {
  deleteUserRefreshToken,
  listRefreshTokens,
  listUserRefreshTokens,
  type RefreshTokenFilter,
} from "../services/auth/refresh-token-list.ts";

const rtList = listQuery<RefreshTokenFilter>({
  order: ["created_at", "client_id", "mobile"],
  defaultOrder: "created_at",
  filters: ["client_id", "created_at", "mobile"],
});
const listResponses = { 200: "`{items, filtered, total}`", 400: "Invalid list parameter", 404: "No such user" };
const deleteResponses = { 204: "Deleted or absent (sessions issued from it stay valid)", 404: "No such user" };

export function refreshTokenRoutes(): RouteGroup {
  return new RouteGroup("tokens")
    .get(
      "/tokens",
      {
        summary: "Refresh tokens of the scoping tenant (and below with `recurse`)",
        acl: "auth.tokens.read",
        query: rtList,
        responses: listResponses,
      },
      async ({ c, app, caller, query }) => c.json(await listRefreshTokens(app, caller, query)),
    )
    .get(
      "/users/me/tokens",
      {
        summary: "The caller's refresh tokens",
        acl: "auth.users.me.tokens.read",
        query: rtList,
        responses: listResponses,
      },
      async ({ c, app, caller, query }) =>
        c.json(await listUserRefreshTokens(app, caller, "me", { ...query, recurse: false })),
    )
    .delete(
      "/users/me/tokens/{client_id}",
      {
        summary: "Delete the caller's refresh token of a client",
        acl: "auth.users.me.tokens.{client_id}.delete",
        params: z.object({ client_id: segment() }),
        responses: deleteResponses,
      },
      async ({ c, app, caller, params }) => {
        await deleteUserRefreshToken(app, caller, "me", params.client_id);
        return c.body(null, 204);
      },
    )
    .get(
      "/users/{user_uuid}/tokens",
      {
        summary: "Refresh tokens of a user",
        acl: "auth.users.{user_uuid}.tokens.read",
        params: z.object({ user_uuid: uuidParam }),
        query: rtList,
        responses: listResponses,
      },
      async ({ c, app, caller, params, query }) =>
        c.json(await listUserRefreshTokens(app, caller, params.user_uuid, query)),
    )
    .delete(
      "/users/{user_uuid}/tokens/{client_id}",
      {
        summary: "Delete a user's refresh token of a client",
        acl: "auth.users.{user_uuid}.tokens.{client_id}.delete",
        params: z.object({ user_uuid: uuidParam, client_id: segment() }),
        responses: deleteResponses,
      },
      async ({ c, app, caller, params }) => {
        await deleteUserRefreshToken(app, caller, params.user_uuid, params.client_id);
        return c.body(null, 204);
      },
    );
}
