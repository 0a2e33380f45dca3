// External authentication (wazo-auth's external-auth API, docs/plugins.md): the generic routes, and the
// routes of every loaded external-auth plugin under /users/{user_uuid}/external/{auth_type}.
import { z } from "zod";
import type { AppContext } from "../boot/context.ts";
import { listQuery } from "../domain/collection.ts";
import { orAbsent } from "../domain/errors.ts";
import { segment } from "../domain/strings.ts";
import { RouteGroup, type RouteInput } from "../http/route.ts";
import { uuidParam } from "../domain/validate.ts";
import type { ExternalAuthPlugin, ExternalHandler } from "../plugins/external-auth-types.ts";
import {
  deleteTenantConfig,
  listExternalUsers,
  listUserExternal,
  readTenantConfig,
  writeTenantConfig,
} from "../services/integrations/external-auth.ts";
import { completeOAuth2 } from "../services/integrations/oauth2.ts";
import { requireVisibleUser } from "../services/identity/visibility.ts";

const userParam = z.object({ user_uuid: uuidParam });
const typeParam = z.object({ auth_type: segment() });
const anyObject = z.record(z.string(), z.unknown());
const VERB = { get: "read", post: "create", put: "update", delete: "delete" } as const;

/** Runs a plugin handler for a user the caller may see (D9 of docs/wazo-auth-differences.md). */
function pluginHandler(handler: ExternalHandler) {
  return async ({ c, app, caller, params, body }: RouteInput<{ user_uuid: string }, undefined, unknown>) => {
    // DELETE of an absent or unseen user's data: the desired state already (D4 of docs/wazo-auth-differences.md).
    const user =
      c.req.method === "DELETE"
        ? await orAbsent(requireVisibleUser(app, caller, params.user_uuid))
        : await requireVisibleUser(app, caller, params.user_uuid);
    if (!user) return c.body(null, 204);
    const res = await handler({
      userUuid: user.uuid,
      tenantUuid: user.tenantUuid,
      body: body ?? {},
      query: c.req.query(),
    });
    // A PUT answers 204 with no body (D3 of docs/wazo-auth-differences.md), whatever the plugin returns.
    if (c.req.method === "PUT" || res.body === undefined)
      return c.body(null, c.req.method === "PUT" ? 204 : (res.status as 204));
    return c.json(res.body as object, res.status as 200);
  };
}

/** wazo-auth echoes the stored data on a PUT: read it back through the plugin's GET. */
function readBack(get: ExternalHandler) {
  return async ({ app, caller, params }: RouteInput<{ user_uuid: string }, undefined, unknown>) => {
    const user = await requireVisibleUser(app, caller, params.user_uuid);
    return (await get({ userUuid: user.uuid, tenantUuid: user.tenantUuid, body: {}, query: {} })).body ?? {};
  };
}

function mountPlugin(group: RouteGroup, type: string, plugin: ExternalAuthPlugin): void {
  const base = `/users/{user_uuid}/external/${type}`;
  for (const method of ["post", "get", "put", "delete"] as const) {
    const handler = plugin.routes[method];
    if (!handler) continue;
    const withBody = method === "post" || method === "put";
    group.add(
      method,
      base,
      {
        summary: `${method.toUpperCase()} the user's ${type} link`,
        acl: `auth.users.{user_uuid}.external.${type}.${VERB[method]}`,
        params: userParam,
        ...(withBody ? { body: z.unknown() } : {}),
        responses: { 200: "Plugin response", 404: "No such user or data" },
        ...(method === "put" && plugin.routes.get
          ? { wazoPutAnswer: { description: "The stored data, as GET answers it", read: readBack(plugin.routes.get) } }
          : {}),
      },
      pluginHandler(handler) as never,
    );
  }
  for (const extra of plugin.routes.extra ?? []) {
    group.add(
      extra.method,
      `${base}${extra.path}`,
      {
        summary: extra.summary ?? `${type} ${extra.path}`,
        acl: `auth.users.{user_uuid}.external.${type}.${extra.access}`,
        params: userParam,
        responses: { 200: "Plugin response", 404: "No such user or data" },
      },
      pluginHandler(extra.handler) as never,
    );
  }
}

export function externalRoutes(app: AppContext): RouteGroup {
  const group = new RouteGroup("external")
    .get(
      "/users/{user_uuid}/external",
      {
        summary: "Every enabled external auth type with the user's safe data",
        acl: "auth.users.{user_uuid}.external.read",
        params: userParam,
        query: listQuery<"type">({ order: ["type"], defaultOrder: "type", filters: ["type"] }),
        responses: { 200: "`{items, filtered, total}`", 404: "No such user" },
      },
      async ({ c, app: a, caller, params, query }) =>
        c.json(await listUserExternal(a, caller, params.user_uuid, query)),
    )
    .get(
      "/external/{auth_type}/config",
      {
        summary: "The scoping tenant's configuration of a type",
        acl: "auth.{auth_type}.external.config.read",
        params: typeParam,
        responses: { 200: "The configuration", 404: "No such type or configuration" },
      },
      async ({ c, app: a, caller, params }) => c.json(await readTenantConfig(a, caller, params.auth_type)),
    )
    .post(
      "/external/{auth_type}/config",
      {
        summary: "Configure a type for the scoping tenant",
        acl: "auth.{auth_type}.external.config.create",
        params: typeParam,
        body: anyObject,
        responses: { 201: '`""`', 404: "No such type", 409: "Already configured" },
      },
      async ({ c, app: a, caller, params, body }) => {
        await writeTenantConfig(a, caller, params.auth_type, body, "create");
        return c.json("", 201);
      },
    )
    .put(
      "/external/{auth_type}/config",
      {
        summary: "Replace the scoping tenant's configuration of a type",
        acl: "auth.{auth_type}.external.config.update",
        params: typeParam,
        body: anyObject,
        responses: { 204: "Replaced", 404: "No such type or configuration" },
      },
      async ({ c, app: a, caller, params, body }) => {
        await writeTenantConfig(a, caller, params.auth_type, body, "update");
        return c.body(null, 204);
      },
    )
    .delete(
      "/external/{auth_type}/config",
      {
        summary: "Remove the scoping tenant's configuration of a type",
        acl: "auth.{auth_type}.external.config.delete",
        params: typeParam,
        responses: { 204: "Removed", 404: "No such type or configuration" },
      },
      async ({ c, app: a, caller, params }) => {
        await deleteTenantConfig(a, caller, params.auth_type);
        return c.body(null, 204);
      },
    )
    .get(
      "/external/{auth_type}/users",
      {
        summary: "Users of the scoping tenant linked to a type",
        acl: "auth.{auth_type}.external.users.read",
        params: typeParam,
        query: listQuery({ order: [] }),
        responses: { 200: "`{items: [{uuid}], filtered, total}`", 404: "No such type" },
      },
      async ({ c, app: a, caller, params, query }) =>
        c.json(await listExternalUsers(a, caller, params.auth_type, query)),
    )
    .get(
      "/external/{auth_type}/oauth2/callback",
      {
        summary: "OAuth2 redirect endpoint: the provider sends the user back here with `code` and `state`",
        params: typeParam,
        responses: { 200: "Authorization complete", 404: "Unknown or expired state" },
      },
      async ({ c, app: a, params }) => {
        await completeOAuth2(a, params.auth_type, c.req.query());
        return c.html(
          "<!DOCTYPE html><html><body><p>Authorization complete. You may close this window.</p></body></html>",
        );
      },
    );
  for (const [type, plugin] of app.plugins.externalAuth) mountPlugin(group, type, plugin);
  return group;
}
