// A user's groups and policies (wazo-auth's user group and policy API).
import { z } from "zod";
import { segment } from "../domain/strings.ts";
import { RouteGroup } from "../http/route.ts";
import { uuidParam } from "../domain/validate.ts";
import { listUserGroups, listUserPolicies, setUserPolicy } from "../services/identity/policy-links.ts";
import { groupList, policyList } from "./lists.ts";

const userParam = z.object({ user_uuid: uuidParam });
const policyParams = z.object({ user_uuid: uuidParam, policy: segment() });

export function userLinkRoutes(): RouteGroup {
  return new RouteGroup("users")
    .get(
      "/users/{user_uuid}/groups",
      {
        summary: "Groups of a user",
        acl: "auth.users.{user_uuid}.groups.read",
        params: userParam,
        query: groupList,
        responses: { 200: "`{items, filtered, total}`", 404: "No such user" },
      },
      async ({ c, app, caller, params, query }) => c.json(await listUserGroups(app, caller, params.user_uuid, query)),
    )
    .get(
      "/users/{user_uuid}/policies",
      {
        summary: "Policies attached directly to a user",
        acl: "auth.users.{user_uuid}.policies.read",
        params: userParam,
        query: policyList,
        responses: { 200: "`{items, filtered, total}`", 404: "No such user" },
      },
      async ({ c, app, caller, params, query }) => c.json(await listUserPolicies(app, caller, params.user_uuid, query)),
    )
    .put(
      "/users/{user_uuid}/policies/{policy}",
      {
        summary: "Attach a policy (uuid or slug) to a user",
        acl: "auth.users.{user_uuid}.policies.{policy}.create",
        params: policyParams,
        responses: { 204: "Attached", 403: "An access the caller does not hold", 404: "No such user or policy" },
      },
      async ({ c, app, caller, params }) => {
        await setUserPolicy(app, caller, params.user_uuid, params.policy, true);
        return c.body(null, 204);
      },
    )
    .delete(
      "/users/{user_uuid}/policies/{policy}",
      {
        summary: "Detach a policy from a user",
        acl: "auth.users.{user_uuid}.policies.{policy}.delete",
        params: policyParams,
        responses: { 204: "Detached", 403: "An access the caller does not hold", 404: "No such user or policy" },
      },
      async ({ c, app, caller, params }) => {
        await setUserPolicy(app, caller, params.user_uuid, params.policy, false);
        return c.body(null, 204);
      },
    );
}
