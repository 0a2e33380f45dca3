// Tenants (wazo-auth's tenant API).
import { z } from "zod";
import { listQuery } from "../domain/collection.ts";
import { invalidField } from "../domain/errors.ts";
import { RouteGroup } from "../http/route.ts";
import { CAPS, text as storable } from "../domain/strings.ts";
import { intField, uuidField, uuidParam } from "../domain/validate.ts";
import { TENANT_MIN_LENGTH } from "../services/identity/tenant-password-policy.ts";
import {
  createTenantAsCaller,
  deleteTenant,
  listTenants,
  requireVisibleTenant,
  setTenantParent,
  tenantDomainsOf,
  updateTenant,
  type TenantFilter,
} from "../services/identity/tenants.ts";

// wazo-auth's domain names: at least two labels, letters/digits/hyphens, no underscore, no edge hyphen.
const DOMAIN_RE = /^(?=.{1,253}\.?$)(?:(?!(-|_)|[^.]+_)[A-Za-z0-9-_]{1,}(?<!-)(?:\.|$)){2,63}$/;
const text = (min: number, max: number) => storable(max, { min }).nullable().optional();

const address = z
  .object({
    line_1: text(1, 256),
    line_2: text(1, 256),
    city: text(1, 128),
    state: text(1, 128),
    country: text(1, 128),
    zip_code: text(1, 16),
  })
  .nullable()
  .optional();

const tenantFields = {
  name: text(1, CAPS.tenantName),
  contact: uuidField.nullable().optional(),
  phone: text(1, 32),
  default_authentication_method: storable(CAPS.shortName, { min: 1 }).optional(),
  domain_names: z.array(storable(253).regex(DOMAIN_RE)).optional(),
  address,
  // Omitted: unchanged, even by PUT (a client unaware of it never resets it); null: inherited.
  password_policy: z
    .object({
      min_length: intField(TENANT_MIN_LENGTH.min, TENANT_MIN_LENGTH.max)
        .nullable()
        .describe("Shortest password of the tenant's users (and its sub-tenants'); null: inherited"),
    })
    .nullable()
    .optional(),
};
const createBody = z.object({
  uuid: uuidField.optional(),
  slug: z
    .string()
    .min(1)
    .max(10)
    .regex(/^[a-zA-Z0-9_]+$/)
    .optional(),
  ...tenantFields,
});
const updateBody = z.object(tenantFields);

const tenantList = listQuery<TenantFilter>({
  order: ["name", "slug"],
  defaultOrder: "name",
  filters: ["uuid", "name", "slug", "domain_name"],
});
const tenantParam = z.object({ tenant_uuid: uuidParam });

export function tenantRoutes(): RouteGroup {
  return new RouteGroup("tenants")
    .get(
      "/tenants",
      {
        summary: "The scoping tenant and all its descendants",
        acl: "auth.tenants.read",
        query: tenantList,
        responses: { 200: "`{items, filtered, total}`", 400: "Invalid list parameter" },
      },
      async ({ c, app, caller, query }) => {
        const uuids = c.req.queries("uuids");
        if (uuids && uuids.length > 25)
          throw invalidField("tenants", "uuids", "length", { max: 25 }, "At most 25 uuids");
        return c.json(await listTenants(app, caller, query, uuids));
      },
    )
    .post(
      "/tenants",
      {
        summary: "Create a tenant under the scoping tenant",
        acl: "auth.tenants.create",
        body: createBody,
        responses: {
          200: "The tenant",
          400: "Invalid body, or a password policy below the one in force above",
          403: "uuid equals the parent's",
          404: "No such contact user",
          409: "uuid, slug or domain name already used",
        },
      },
      async ({ c, app, caller, body }) => c.json(await createTenantAsCaller(app, caller, body)),
    )
    .get(
      "/tenants/{tenant_uuid}",
      {
        summary: "A tenant",
        acl: "auth.tenants.{tenant_uuid}.read",
        params: tenantParam,
        responses: { 200: "The tenant", 404: "No such tenant" },
      },
      async ({ c, app, caller, params }) => c.json(await requireVisibleTenant(app, caller, params.tenant_uuid)),
    )
    .put(
      "/tenants/{tenant_uuid}",
      {
        summary: "Replace a tenant (omitted fields reset, but for `password_policy`; slug immutable)",
        acl: "auth.tenants.{tenant_uuid}.update",
        params: tenantParam,
        body: updateBody,
        responses: {
          204: "Updated",
          400: "Invalid body, or a password policy below the one in force above",
          404: "No such tenant or contact",
          409: "Domain name already used",
        },
        wazoPutAnswer: {
          description: "The tenant",
          read: ({ app, caller, params }) => requireVisibleTenant(app, caller, params.tenant_uuid),
        },
      },
      async ({ c, app, caller, params, body }) => {
        await updateTenant(app, caller, params.tenant_uuid, body);
        return c.body(null, 204);
      },
    )
    .delete(
      "/tenants/{tenant_uuid}",
      {
        summary: "Delete a tenant and everything it owns",
        acl: "auth.tenants.{tenant_uuid}.delete",
        params: tenantParam,
        responses: { 204: "Deleted or absent", 403: "The caller's own tenant", 409: "The tenant has sub-tenants" },
      },
      async ({ c, app, caller, params }) => {
        await deleteTenant(app, caller, params.tenant_uuid);
        return c.body(null, 204);
      },
    )
    .get(
      "/tenants/{tenant_uuid}/domains",
      {
        summary: "Domain names of a tenant with their uuids",
        acl: "auth.tenants.{tenant_uuid}.domains.read",
        params: tenantParam,
        responses: { 200: "`{items, total}`", 404: "No such tenant" },
      },
      async ({ c, app, caller, params }) => c.json(await tenantDomainsOf(app, caller, params.tenant_uuid)),
    )
    .put(
      "/tenants/{tenant_uuid}/parent/{parent_tenant_uuid}",
      {
        operationId: "setTenantParent",
        summary: "Move a tenant under another one",
        acl: "auth.tenants.{tenant_uuid}.parent.{parent_tenant_uuid}.update",
        params: z.object({ tenant_uuid: uuidParam, parent_tenant_uuid: uuidParam }),
        responses: {
          204: "Moved",
          403: "The move would lower a minimum password length the caller may not lower",
          404: "No such tenant",
          409: "Would create a cycle",
        },
      },
      async ({ c, app, caller, params }) => {
        await setTenantParent(app, caller, params.tenant_uuid, params.parent_tenant_uuid);
        return c.body(null, 204);
      },
    );
}
