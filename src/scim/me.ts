// SCIM `/Me` (RFC 7644 §3.11): the User resource of the user whose token calls. Reading takes the
// user's own `auth.users.me.read` (the stock `tessera_user` policy carries it); changing takes
// `auth.scim.me.update` and deleting `auth.scim.me.delete`, which no stock policy carries (an
// administrator grants them, under the grant rule). What a user may change: services/scim/me.ts.
import { RouteGroup, queryObject } from "../http/route.ts";
import { scimQueryOf } from "../services/scim/list.ts";
import { deleteScimMe, getScimMe, patchScimMe, replaceScimMe } from "../services/scim/me.ts";
import { ERRORS, readQuery, resourceBody, SCIM_HEADERS, WRITE_HEADERS } from "./params.ts";
import { scimJson, scimMeScope } from "./scope.ts";

const ME_ERRORS = {
  ...ERRORS,
  400: "RFC 7644 §3.12 error; scimType mutability when the change touches userName, emails, active, password, externalId or the Enterprise extension",
  501: "The bearer token is not a user's (a SCIM token, a client's token): it has no /Me (§3.11)",
};

export function scimMeRoutes(): RouteGroup {
  return new RouteGroup("scim", "scim")
    .get(
      "/scim/v2/Me",
      {
        summary: "SCIM: the calling user's own User resource",
        headers: SCIM_HEADERS,
        query: readQuery,
        responses: { 200: "The User", ...ME_ERRORS },
      },
      async ({ c, app }) => {
        const scope = await scimMeScope(c, app, "auth.users.me.read");
        return scimJson(await getScimMe(scope, scimQueryOf(queryObject(c))));
      },
    )
    .put(
      "/scim/v2/Me",
      {
        summary: "SCIM: replace the calling user's own profile (names, language, kept attributes)",
        headers: WRITE_HEADERS,
        body: resourceBody,
        responses: { 200: "The User", 412: "If-Match failed", ...ME_ERRORS },
      },
      async ({ c, app, body }) => {
        const scope = await scimMeScope(c, app, "auth.scim.me.update");
        return scimJson(await replaceScimMe(scope, body, c.req.header("If-Match")));
      },
    )
    .patch(
      "/scim/v2/Me",
      {
        summary: "SCIM: modify the calling user's own profile (PatchOp)",
        headers: WRITE_HEADERS,
        body: resourceBody,
        responses: { 200: "The User", 412: "If-Match failed", ...ME_ERRORS },
      },
      async ({ c, app, body }) => {
        const scope = await scimMeScope(c, app, "auth.scim.me.update");
        return scimJson(await patchScimMe(scope, body, c.req.header("If-Match")));
      },
    )
    .delete(
      "/scim/v2/Me",
      {
        summary: "SCIM: delete the calling user, ending its sessions and tokens",
        headers: WRITE_HEADERS,
        responses: { 204: "Deleted", 412: "If-Match failed", ...ME_ERRORS },
      },
      async ({ c, app }) => {
        const scope = await scimMeScope(c, app, "auth.scim.me.delete");
        await deleteScimMe(scope, c.req.header("If-Match"));
        return c.body(null, 204);
      },
    );
}
