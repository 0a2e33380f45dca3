// Groups (wazo-auth's group API): CRUD, members and policies.
import { z } from "zod";
import { RouteGroup } from "../http/route.ts";
import { CAPS, segment, text } from "../domain/strings.ts";
import { uuidParam } from "../domain/validate.ts";
import {
  addGroupUser,
  createGroup,
  deleteGroup,
  listGroups,
  listGroupUsers,
  removeGroupUser,
  requireVisibleGroup,
  updateGroup,
  groupJson,
} from "../services/identity/groups.ts";
import { listGroupPolicies, setGroupPolicy } from "../services/identity/policy-links.ts";
import { groupList, groupUserList, policyList } from "./lists.ts";

const groupParam = z.object({ group_uuid: uuidParam });
const memberParams = z.object({ group_uuid: uuidParam, user_uuid: uuidParam });
const policyParams = z.object({ group_uuid: uuidParam, policy: segment() });

export function groupRoutes(): RouteGroup {
  return new RouteGroup("groups")
    .get(
      "/groups",
      {
        summary: "Groups of the scoping tenant (and below with `recurse`)",
        acl: "auth.groups.read",
        query: groupList,
        responses: { 200: "`{items, filtered, total}`", 400: "Invalid list parameter" },
      },
      async ({ c, app, caller, query }) => c.json(await listGroups(app, caller, query)),
    )
    .post(
      "/groups",
      {
        summary: "Create a group in the scoping tenant",
        acl: "auth.groups.create",
        body: z.object({
          name: text(CAPS.groupName, { min: 1 }),
          slug: text(CAPS.slug, { min: 1 })
            .regex(/^[a-zA-Z0-9_-]+$/)
            .optional(),
        }),
        responses: { 200: "The group", 400: "Invalid body", 409: "Name or slug already used" },
      },
      async ({ c, app, caller, body }) => c.json(await createGroup(app, caller, body)),
    )
    .get(
      "/groups/{group_uuid}",
      {
        summary: "A group",
        acl: "auth.groups.{group_uuid}.read",
        params: groupParam,
        responses: { 200: "The group", 404: "No such group" },
      },
      async ({ c, app, caller, params }) =>
        c.json(groupJson(await requireVisibleGroup(app, caller, params.group_uuid))),
    )
    .put(
      "/groups/{group_uuid}",
      {
        summary: "Rename a group",
        acl: "auth.groups.{group_uuid}.update",
        params: groupParam,
        body: z.object({ name: text(CAPS.groupName, { min: 1 }) }),
        responses: {
          204: "Updated",
          400: "Invalid body",
          403: "System-managed group",
          404: "No such group",
          409: "Name already used",
        },
        wazoPutAnswer: {
          description: "The group",
          read: async ({ app, caller, params }) => groupJson(await requireVisibleGroup(app, caller, params.group_uuid)),
        },
      },
      async ({ c, app, caller, params, body }) => {
        await updateGroup(app, caller, params.group_uuid, body.name);
        return c.body(null, 204);
      },
    )
    .delete(
      "/groups/{group_uuid}",
      {
        summary: "Delete a group",
        acl: "auth.groups.{group_uuid}.delete",
        params: groupParam,
        responses: {
          204: "Deleted or absent",
          403: "System-managed group, or an entry of its policies the caller could not take away",
        },
      },
      async ({ c, app, caller, params }) => {
        await deleteGroup(app, caller, params.group_uuid);
        return c.body(null, 204);
      },
    )
    .get(
      "/groups/{group_uuid}/users",
      {
        summary: "Members of a group",
        acl: "auth.groups.{group_uuid}.users.read",
        params: groupParam,
        query: groupUserList,
        responses: { 200: "`{items, filtered, total}`", 404: "No such group" },
      },
      async ({ c, app, caller, params, query }) => c.json(await listGroupUsers(app, caller, params.group_uuid, query)),
    )
    .put(
      "/groups/{group_uuid}/users/{user_uuid}",
      {
        summary:
          "Add a user (of the same tenant) to a group; the caller must be able to grant every entry of the group's policies",
        acl: "auth.groups.{group_uuid}.users.{user_uuid}.create",
        params: memberParams,
        responses: {
          204: "Member",
          400: "Not the same tenant",
          403: "System-managed group, or an entry of its policies the caller does not hold",
          404: "No such group or user",
        },
      },
      async ({ c, app, caller, params }) => {
        await addGroupUser(app, caller, params.group_uuid, params.user_uuid);
        return c.body(null, 204);
      },
    )
    .delete(
      "/groups/{group_uuid}/users/{user_uuid}",
      {
        summary: "Remove a user from a group; the caller must be able to take away every entry of the group's policies",
        acl: "auth.groups.{group_uuid}.users.{user_uuid}.delete",
        params: memberParams,
        responses: {
          204: "Not a member",
          403: "System-managed group, or an entry of its policies the caller could not take away",
          404: "No such group or user",
        },
      },
      async ({ c, app, caller, params }) => {
        await removeGroupUser(app, caller, params.group_uuid, params.user_uuid);
        return c.body(null, 204);
      },
    )
    .get(
      "/groups/{group_uuid}/policies",
      {
        summary: "Policies of a group",
        acl: "auth.groups.{group_uuid}.policies.read",
        params: groupParam,
        query: policyList,
        responses: { 200: "`{items, filtered, total}`", 404: "No such group" },
      },
      async ({ c, app, caller, params, query }) =>
        c.json(await listGroupPolicies(app, caller, params.group_uuid, query)),
    )
    .put(
      "/groups/{group_uuid}/policies/{policy}",
      {
        summary: "Attach a policy (uuid or slug) to a group",
        acl: "auth.groups.{group_uuid}.policies.{policy}.create",
        params: policyParams,
        responses: { 204: "Attached", 403: "An access the caller does not hold", 404: "No such group or policy" },
      },
      async ({ c, app, caller, params }) => {
        await setGroupPolicy(app, caller, params.group_uuid, params.policy, true);
        return c.body(null, 204);
      },
    )
    .delete(
      "/groups/{group_uuid}/policies/{policy}",
      {
        summary: "Detach a policy from a group",
        acl: "auth.groups.{group_uuid}.policies.{policy}.delete",
        params: policyParams,
        responses: { 204: "Detached", 403: "An access the caller does not hold", 404: "No such group or policy" },
      },
      async ({ c, app, caller, params }) => {
        await setGroupPolicy(app, caller, params.group_uuid, params.policy, false);
        return c.body(null, 204);
      },
    );
}
