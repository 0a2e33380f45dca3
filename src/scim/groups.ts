// SCIM 2.0 Groups (RFC 7644 §3) of the bearer token's tenant: the fourth door's resource routes.
import { RouteGroup, queryObject } from "../http/route.ts";
import { scimQueryOf } from "../services/scim/list.ts";
import {
  createScimGroup,
  deleteScimGroup,
  getScimGroup,
  listScimGroups,
  patchScimGroup,
  replaceScimGroup,
} from "../services/scim/groups.ts";
import { ERRORS, idParam, listQuery, readQuery, resourceBody, SCIM_HEADERS, WRITE_HEADERS } from "./params.ts";
import { scimJson, scimScope } from "./scope.ts";

export function scimGroupRoutes(): RouteGroup {
  return new RouteGroup("scim", "scim")
    .get(
      "/scim/v2/Groups",
      {
        summary: "SCIM: list or search Groups (ListResponse)",
        headers: SCIM_HEADERS,
        query: listQuery,
        responses: { 200: "ListResponse", ...ERRORS },
      },
      async ({ c, app }) => {
        const scope = await scimScope(c, app, "auth.scim.groups.read");
        return scimJson(await listScimGroups(scope, scimQueryOf(queryObject(c))));
      },
    )
    .post(
      "/scim/v2/Groups",
      {
        summary: "SCIM: create a Group",
        headers: SCIM_HEADERS,
        body: resourceBody,
        responses: { 201: "The Group", 409: "displayName already used (scimType uniqueness)", ...ERRORS },
      },
      async ({ c, app, body }) => {
        const scope = await scimScope(c, app, "auth.scim.groups.create");
        return scimJson(await createScimGroup(scope, body), 201);
      },
    )
    .get(
      "/scim/v2/Groups/{id}",
      {
        summary: "SCIM: a Group",
        headers: SCIM_HEADERS,
        params: idParam,
        query: readQuery,
        responses: { 200: "The Group", ...ERRORS },
      },
      async ({ c, app, params }) => {
        const scope = await scimScope(c, app, "auth.scim.groups.read");
        return scimJson(await getScimGroup(scope, params.id, scimQueryOf(queryObject(c))));
      },
    )
    .put(
      "/scim/v2/Groups/{id}",
      {
        summary: "SCIM: replace a Group (displayName, externalId, members)",
        headers: WRITE_HEADERS,
        params: idParam,
        body: resourceBody,
        responses: { 200: "The Group", 409: "displayName already used", 412: "If-Match failed", ...ERRORS },
      },
      async ({ c, app, params, body }) => {
        const scope = await scimScope(c, app, "auth.scim.groups.update");
        return scimJson(await replaceScimGroup(scope, params.id, body, c.req.header("If-Match")));
      },
    )
    .patch(
      "/scim/v2/Groups/{id}",
      {
        summary: "SCIM: modify a Group (PatchOp: members added and removed as Entra ID and Okta send them)",
        headers: WRITE_HEADERS,
        params: idParam,
        body: resourceBody,
        responses: { 200: "The Group", 409: "displayName already used", 412: "If-Match failed", ...ERRORS },
      },
      async ({ c, app, params, body }) => {
        const scope = await scimScope(c, app, "auth.scim.groups.update");
        return scimJson(await patchScimGroup(scope, params.id, body, c.req.header("If-Match")));
      },
    )
    .delete(
      "/scim/v2/Groups/{id}",
      {
        summary: "SCIM: delete a Group",
        headers: WRITE_HEADERS,
        params: idParam,
        responses: { 204: "Deleted", ...ERRORS },
      },
      async ({ c, app, params }) => {
        const scope = await scimScope(c, app, "auth.scim.groups.delete");
        await deleteScimGroup(scope, params.id);
        return c.body(null, 204);
      },
    );
}
