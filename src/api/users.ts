// Users (wazo-auth's user API).
import { z } from "zod";
import { RouteGroup } from "../http/route.ts";
import { userList } from "./lists.ts";
import { CAPS, emailText, text, usernameText } from "../domain/strings.ts";
import { boolField, localeTag, uuidField, uuidParam } from "../domain/validate.ts";
import { unlockUserLogins } from "../services/auth/login-unlock.ts";
import {
  changePassword,
  createUserAsCaller,
  deleteUser,
  getUser,
  listUsersJson,
  updateUser,
} from "../services/identity/users.ts";

const name = text(CAPS.personName, { maxBytes: CAPS.personNameBytes }).nullable().optional();
const password = text(CAPS.password, { min: 1 });
const editable = {
  username: usernameText().nullable().optional(),
  firstname: name,
  lastname: name,
  purpose: z.enum(["user", "internal", "external_api"]).optional(),
  authentication_method: text(CAPS.shortName, { min: 1 }).optional(),
  enabled: boolField().optional(),
  // Tessera addition (issue 43): the user's language for the hosted pages and mails (docs/languages.md).
  locale: localeTag().nullable().optional(),
};
const createBody = z.object({
  uuid: uuidField.optional(),
  ...editable,
  password: password.nullable().optional(),
  email_address: emailText().nullable().optional(),
});
const updateBody = z.object(editable);
const passwordBody = z.object({ old_password: password, new_password: password });

const userParam = z.object({ user_uuid: uuidParam });

export function userRoutes(): RouteGroup {
  return new RouteGroup("users")
    .get(
      "/users",
      {
        summary: "Users of the scoping tenant (and below with `recurse`)",
        acl: "auth.users.read",
        query: userList,
        responses: { 200: "`{items, filtered, total}`", 400: "Invalid list parameter" },
      },
      async ({ c, app, caller, query }) =>
        c.body(await listUsersJson(app, caller, query), 200, { "Content-Type": "application/json" }),
    )
    .post(
      "/users",
      {
        summary: "Create a user in the scoping tenant",
        acl: "auth.users.create",
        body: createBody,
        responses: {
          200: "The user",
          400: "Invalid body",
          403: "`purpose: internal` (exempt from MFA) where a parent tenant of the caller's requires MFA",
          409: "uuid, username or email already used",
        },
      },
      async ({ c, app, caller, body }) => c.json(await createUserAsCaller(app, caller, body)),
    )
    .get(
      "/users/{user_uuid}",
      {
        summary: "A user",
        acl: "auth.users.{user_uuid}.read",
        params: userParam,
        responses: { 200: "The user", 404: "No such user" },
      },
      async ({ c, app, caller, params }) => c.json(await getUser(app, caller, params.user_uuid)),
    )
    .put(
      "/users/{user_uuid}",
      {
        summary: "Replace a user's fields (disabling ends its sessions)",
        acl: "auth.users.{user_uuid}.update",
        params: userParam,
        body: updateBody,
        responses: {
          204: "Updated",
          400: "Invalid body",
          403: "A change to `purpose: internal` (exempt from MFA) where a parent tenant of the caller's requires MFA",
          404: "No such user",
          409: "Username already used",
        },
        wazoPutAnswer: {
          description: "The user",
          read: ({ app, caller, params }) => getUser(app, caller, params.user_uuid),
        },
      },
      async ({ c, app, caller, params, body }) => {
        await updateUser(app, caller, params.user_uuid, body);
        return c.body(null, 204);
      },
    )
    .delete(
      "/users/{user_uuid}",
      {
        summary: "Delete a user, ending its sessions and tokens",
        acl: "auth.users.{user_uuid}.delete",
        params: userParam,
        responses: { 204: "Deleted or absent" },
      },
      async ({ c, app, caller, params }) => {
        await deleteUser(app, caller, params.user_uuid);
        return c.body(null, 204);
      },
    )
    .delete(
      "/users/{user_uuid}/login-failures",
      {
        operationId: "unlockUserLogins",
        summary:
          "Forget a user's failed logins (per login name, and per login name and address), lifting their locks; address locks stay",
        acl: "auth.users.{user_uuid}.login-failures.delete",
        params: userParam,
        responses: { 204: "Forgotten, or no such user (D4)", 503: "The database is unavailable" },
      },
      async ({ c, app, caller, params }) => {
        await unlockUserLogins(app, caller, params.user_uuid);
        return c.body(null, 204);
      },
    )
    .put(
      "/users/{user_uuid}/password",
      {
        summary: "Change a password (the old one is required); every session of the user ends",
        acl: "auth.users.{user_uuid}.password.update",
        params: userParam,
        body: passwordBody,
        responses: {
          204: "Changed",
          400: "Invalid body",
          401: "Wrong old password",
          404: "No such user",
          405: "Password managed by an identity provider",
        },
      },
      async ({ c, app, caller, params, body }) => {
        await changePassword(app, caller, params.user_uuid, body.old_password, body.new_password);
        return c.body(null, 204);
      },
    );
}
