// A tenant's branding of the hosted pages (issue 43; services/identity/branding.ts, docs/languages.md).
import { z } from "zod";
import { text } from "../domain/strings.ts";
import { uuidParam } from "../domain/validate.ts";
import { RouteGroup } from "../http/route.ts";
import { getBranding, MAX_LOGO_BYTES, setBranding } from "../services/identity/branding.ts";

const color = z
  .string()
  .regex(/^#[0-9a-fA-F]{6}$/, "a colour as #rrggbb")
  .transform((s) => s.toLowerCase())
  .nullable()
  .optional();
const brandingBody = z.object({
  product_name: text(64, { min: 1 }).nullable().optional(),
  logo: z
    .string()
    .max(Math.ceil((MAX_LOGO_BYTES * 4) / 3) + 64)
    .nullable()
    .optional(),
  primary_color: color,
  background_color: color,
  text_color: color,
});
const brandingJson = z.object({
  product_name: z.string().nullable(),
  logo: z.string().nullable(),
  primary_color: z.string().nullable(),
  background_color: z.string().nullable(),
  text_color: z.string().nullable(),
});
const tenantParam = z.object({ tenant_uuid: uuidParam });

export function brandingRoutes(): RouteGroup {
  return new RouteGroup("tenants")
    .get(
      "/tenants/{tenant_uuid}/branding",
      {
        summary: "A tenant's branding of the hosted pages: product name, logo, colours (all null: the stock look)",
        operationId: "getTenantBranding",
        acl: "auth.tenants.{tenant_uuid}.branding.read",
        params: tenantParam,
        responses: { 200: { description: "The branding", schema: brandingJson }, 404: "No such tenant" },
      },
      async ({ c, app, caller, params }) => c.json(await getBranding(app, caller, params.tenant_uuid)),
    )
    .put(
      "/tenants/{tenant_uuid}/branding",
      {
        summary:
          "Replace a tenant's branding (omitted fields: none); colours are checked for WCAG AA contrast, the logo is an inline PNG, JPEG or WebP",
        operationId: "setTenantBranding",
        acl: "auth.tenants.{tenant_uuid}.branding.update",
        params: tenantParam,
        body: brandingBody,
        responses: {
          204: "Saved",
          400: "A colour that is not #rrggbb, a contrast below WCAG AA (`details.<field>.constraint_id: contrast`), a logo that is not a small inline image",
          404: "No such tenant",
        },
      },
      async ({ c, app, caller, params, body }) => {
        await setBranding(app, caller, params.tenant_uuid, {
          product_name: body.product_name ?? null,
          logo: body.logo ?? null,
          primary_color: body.primary_color ?? null,
          background_color: body.background_color ?? null,
          text_color: body.text_color ?? null,
        });
        return c.body(null, 204); // PUT answers 204 (D3 of docs/wazo-auth-differences.md)
      },
    );
}
