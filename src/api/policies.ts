// Policies (wazo-auth's policy API). `{policy}` is a uuid or a slug (the ACL names it either way).
import { z } from "zod";
import { RouteGroup } from "../http/route.ts";
import { policyList } from "./lists.ts";
import { CAPS, segment, text } from "../domain/strings.ts";
import { boolField } from "../domain/validate.ts";
import {
  addAccess,
  createPolicy,
  deletePolicy,
  getPolicy,
  listPolicies,
  removeAccess,
  updatePolicy,
} from "../services/identity/policies.ts";

const SLUG_RE = /^[a-zA-Z0-9_-]+$/;
const fields = {
  name: text(CAPS.policyName, { min: 1 }),
  description: text(CAPS.description).nullable().optional(),
  acl: z.array(text(CAPS.aclEntry)).optional(),
};
const createBody = z.object({
  ...fields,
  slug: text(CAPS.slug, { min: 1 }).regex(SLUG_RE).optional(),
  shared: boolField().optional(),
});
const updateBody = z.object(fields);
const policyParam = z.object({ policy: segment() });
const accessParam = z.object({ policy: segment(), access: text(CAPS.aclEntry, { min: 1 }) });

export function policyRoutes(): RouteGroup {
  return new RouteGroup("policies")
    .get(
      "/policies",
      {
        summary: "Policies visible from the scoping tenant",
        acl: "auth.policies.read",
        query: policyList,
        responses: { 200: "`{items, filtered, total}`", 400: "Invalid list parameter" },
      },
      async ({ c, app, caller, query }) => c.json(await listPolicies(app, caller, query)),
    )
    .post(
      "/policies",
      {
        summary: "Create a policy (its ACL must be held by the caller)",
        acl: "auth.policies.create",
        body: createBody,
        responses: {
          200: "The policy",
          400: "Invalid body",
          403: "An access the caller does not hold",
          409: "Name or slug already used",
        },
      },
      async ({ c, app, caller, body }) => c.json(await createPolicy(app, caller, body)),
    )
    .get(
      "/policies/{policy}",
      {
        summary: "A policy, by uuid or slug",
        acl: "auth.policies.{policy}.read",
        params: policyParam,
        responses: { 200: "The policy", 404: "No such policy" },
      },
      async ({ c, app, caller, params }) => c.json(await getPolicy(app, caller, params.policy)),
    )
    .put(
      "/policies/{policy}",
      {
        summary: "Replace a policy's name, description and ACL",
        acl: "auth.policies.{policy}.update",
        params: policyParam,
        body: updateBody,
        responses: {
          204: "Updated",
          400: "Invalid body",
          403: "Read-only policy, or an access the caller may not grant or remove",
          404: "No such policy",
          409: "Name already used",
        },
        wazoPutAnswer: {
          description: "The policy",
          read: ({ app, caller, params }) => getPolicy(app, caller, params.policy),
        },
      },
      async ({ c, app, caller, params, body }) => {
        await updatePolicy(app, caller, params.policy, body);
        return c.body(null, 204);
      },
    )
    .delete(
      "/policies/{policy}",
      {
        summary: "Delete a policy",
        acl: "auth.policies.{policy}.delete",
        params: policyParam,
        responses: { 204: "Deleted or absent", 403: "Read-only, or an access the caller does not hold" },
      },
      async ({ c, app, caller, params }) => {
        await deletePolicy(app, caller, params.policy);
        return c.body(null, 204);
      },
    )
    .put(
      "/policies/{policy}/acl/{access}",
      {
        summary: "Add one access (URL-encoded) to a policy (already there: no change)",
        acl: "auth.policies.{policy}.update",
        params: accessParam,
        valueParams: ["access"],
        responses: {
          204: "Added, or already there",
          403: "Read-only policy, or an access the caller may not grant",
          404: "No such policy",
        },
      },
      async ({ c, app, caller, params }) => {
        await addAccess(app, caller, params.policy, params.access);
        return c.body(null, 204);
      },
    )
    .delete(
      "/policies/{policy}/acl/{access}",
      {
        summary: "Remove one access from a policy",
        acl: "auth.policies.{policy}.update",
        params: accessParam,
        valueParams: ["access"],
        responses: {
          204: "Removed or absent",
          403: "Read-only policy, or an access the caller may not take away",
          404: "No such policy",
        },
      },
      async ({ c, app, caller, params }) => {
        await removeAccess(app, caller, params.policy, params.access);
        return c.body(null, 204);
      },
    );
}
