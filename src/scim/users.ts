// SCIM 2.0 Users (RFC 7644 §3) of the bearer token's tenant: the fourth door's resource routes.
import { RouteGroup, queryObject } from "../http/route.ts";
import { scimQueryOf } from "../services/scim/list.ts";
import {
  createScimUser,
  deleteScimUser,
  getScimUser,
  listScimUsers,
  patchScimUser,
  replaceScimUser,
} from "../services/scim/users.ts";
import { ERRORS, idParam, listQuery, readQuery, resourceBody, SCIM_HEADERS, WRITE_HEADERS } from "./params.ts";
import { scimJson, scimScope } from "./scope.ts";

export function scimUserRoutes(): RouteGroup {
  return new RouteGroup("scim", "scim")
    .get(
      "/scim/v2/Users",
      {
        summary: "SCIM: list or search Users (ListResponse)",
        headers: SCIM_HEADERS,
        query: listQuery,
        responses: { 200: "ListResponse", ...ERRORS },
      },
      async ({ c, app }) => {
        const scope = await scimScope(c, app, "auth.scim.users.read");
        return scimJson(await listScimUsers(scope, scimQueryOf(queryObject(c))));
      },
    )
    .post(
      "/scim/v2/Users",
      {
        summary: "SCIM: create a User",
        headers: SCIM_HEADERS,
        body: resourceBody,
        responses: { 201: "The User", 409: "userName or an email already used (scimType uniqueness)", ...ERRORS },
      },
      async ({ c, app, body }) => {
        const scope = await scimScope(c, app, "auth.scim.users.create");
        return scimJson(await createScimUser(scope, body), 201);
      },
    )
    .get(
      "/scim/v2/Users/{id}",
      {
        summary: "SCIM: a User",
        headers: SCIM_HEADERS,
        params: idParam,
        query: readQuery,
        responses: { 200: "The User", ...ERRORS },
      },
      async ({ c, app, params }) => {
        const scope = await scimScope(c, app, "auth.scim.users.read");
        return scimJson(await getScimUser(scope, params.id, scimQueryOf(queryObject(c))));
      },
    )
    .put(
      "/scim/v2/Users/{id}",
      {
        summary: "SCIM: replace a User (active: false ends its sessions and refresh tokens)",
        headers: WRITE_HEADERS,
        params: idParam,
        body: resourceBody,
        responses: { 200: "The User", 409: "userName or an email already used", 412: "If-Match failed", ...ERRORS },
      },
      async ({ c, app, params, body }) => {
        const scope = await scimScope(c, app, "auth.scim.users.update");
        return scimJson(await replaceScimUser(scope, params.id, body, c.req.header("If-Match")));
      },
    )
    .patch(
      "/scim/v2/Users/{id}",
      {
        summary: "SCIM: modify a User (PatchOp: add, replace, remove)",
        headers: WRITE_HEADERS,
        params: idParam,
        body: resourceBody,
        responses: { 200: "The User", 409: "userName or an email already used", 412: "If-Match failed", ...ERRORS },
      },
      async ({ c, app, params, body }) => {
        const scope = await scimScope(c, app, "auth.scim.users.update");
        return scimJson(await patchScimUser(scope, params.id, body, c.req.header("If-Match")));
      },
    )
    .delete(
      "/scim/v2/Users/{id}",
      {
        summary: "SCIM: delete a User, ending its sessions and tokens",
        headers: WRITE_HEADERS,
        params: idParam,
        responses: { 204: "Deleted", 412: "If-Match failed", ...ERRORS },
      },
      async ({ c, app, params }) => {
        const scope = await scimScope(c, app, "auth.scim.users.delete");
        await deleteScimUser(scope, params.id, c.req.header("If-Match"));
        return c.body(null, 204);
      },
    );
}
