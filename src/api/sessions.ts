// Sessions (wazo-auth's session API): list and delete, within the caller's tenants (D9 of docs/wazo-auth-differences.md).
import { z } from "zod";
import { listQuery } from "../domain/collection.ts";
import { RouteGroup } from "../http/route.ts";
import { uuidParam } from "../domain/validate.ts";
import { deleteSession, listSessions, listUserSessions } from "../services/auth/session-list.ts";

const sessionList = listQuery({ order: ["mobile"] });

export function sessionRoutes(): RouteGroup {
  return new RouteGroup("sessions")
    .get(
      "/sessions",
      {
        summary: "Sessions of the scoping tenant (and below with `recurse`)",
        acl: "auth.sessions.read",
        query: sessionList,
        responses: { 200: "`{items, filtered, total}`", 400: "Invalid list parameter" },
      },
      async ({ c, app, caller, query }) => c.json(await listSessions(app, caller, query)),
    )
    .delete(
      "/sessions/{session_uuid}",
      {
        summary: "Delete a session and its tokens (204 even when absent)",
        acl: "auth.sessions.{session_uuid}.delete",
        params: z.object({ session_uuid: uuidParam }),
        responses: { 204: "Deleted or absent" },
      },
      async ({ c, app, caller, params }) => {
        await deleteSession(app, caller, params.session_uuid);
        return c.body(null, 204);
      },
    )
    .get(
      "/users/{user_uuid}/sessions",
      {
        summary: "Sessions of a user",
        acl: "auth.users.{user_uuid}.sessions.read",
        params: z.object({ user_uuid: uuidParam }),
        query: sessionList,
        responses: { 200: "`{items, filtered, total}`", 404: "No such user" },
      },
      async ({ c, app, caller, params, query }) => c.json(await listUserSessions(app, caller, params.user_uuid, query)),
    )
    .delete(
      "/users/{user_uuid}/sessions/{session_uuid}",
      {
        summary: "Delete one of a user's sessions (it must belong to that user)",
        acl: "auth.users.{user_uuid}.sessions.{session_uuid}.delete",
        params: z.object({ user_uuid: uuidParam, session_uuid: uuidParam }),
        responses: { 204: "Deleted or absent", 404: "No such user" },
      },
      async ({ c, app, caller, params }) => {
        await deleteSession(app, caller, params.session_uuid, params.user_uuid);
        return c.body(null, 204);
      },
    );
}
