// SAML configuration of the scoping tenant (wazo-auth's SAML configuration API): multipart forms carrying the
// IdP metadata file, the tenant domain users log in with, the SP entity id and the ACS URL.
import { z } from "zod";
import { RouteGroup } from "../http/route.ts";
import {
  createSamlConfig,
  deleteSamlConfig,
  getIdpMetadataXml,
  getSamlConfig,
  samlConfigForTenant,
  updateSamlConfig,
} from "../services/integrations/saml/saml-config.ts";
import { spMetadataXml } from "../services/integrations/saml/saml-client.ts";
import { spKeyPair } from "../services/integrations/saml/sp-key.ts";

const metadataFile = z.union([z.file().max(1_000_000), z.string().max(1_000_000)]);
const httpUrl = z
  .string()
  .min(1)
  .max(512)
  .url({ protocol: /^https?$/ });
const fields = {
  domain_uuid: z
    .string()
    .min(36)
    .max(38)
    .transform((s) => s.toLowerCase()),
  entity_id: z.string().min(1).max(512),
  acs_url: httpUrl,
  metadata: metadataFile,
};
const createForm = z.object(fields);
const updateForm = z.object({
  domain_uuid: fields.domain_uuid.optional(),
  entity_id: fields.entity_id.optional(),
  acs_url: fields.acs_url.optional(),
  metadata: metadataFile.optional(),
});
const configView = z.object({
  tenant_uuid: z.string(),
  domain_uuid: z.string(),
  entity_id: z.string(),
  acs_url: z.string(),
});

const text = async (m: File | string | undefined) => (m === undefined || typeof m === "string" ? m : await m.text());

export function samlConfigRoutes(): RouteGroup {
  return new RouteGroup("saml_config")
    .get(
      "/backends/saml",
      {
        summary: "The tenant's SAML configuration",
        acl: "auth.backends.saml.read",
        responses: { 200: { description: "The configuration", schema: configView }, 404: "None" },
      },
      async ({ c, app, caller }) => c.json(await getSamlConfig(app, caller)),
    )
    .post(
      "/backends/saml",
      {
        summary: "Configure the tenant's SAML identity provider",
        description:
          "Form fields `domain_uuid` (one of the tenant's domains), `entity_id` (Tessera's SP entity id for this tenant, the IdP's audience), `acs_url` and the file `metadata` (the IdP's metadata XML).",
        acl: "auth.backends.saml.create",
        body: createForm,
        bodyType: "form",
        responses: {
          200: { description: "The configuration", schema: configView },
          400: "Invalid form, metadata or domain",
          409: "Already configured",
        },
      },
      async ({ c, app, caller, body }) =>
        c.json(await createSamlConfig(app, caller, { ...body, metadata: (await text(body.metadata))! })),
    )
    .put(
      "/backends/saml",
      {
        summary: "Change the tenant's SAML configuration (the fields sent; the metadata file is optional)",
        acl: "auth.backends.saml.update",
        body: updateForm,
        bodyType: "form",
        responses: { 204: "Changed", 400: "Invalid form, metadata or domain", 404: "None" },
        wazoPutAnswer: { description: "The configuration", read: ({ app, caller }) => getSamlConfig(app, caller) },
      },
      async ({ c, app, caller, body }) => {
        await updateSamlConfig(app, caller, { ...body, metadata: await text(body.metadata) });
        return c.body(null, 204);
      },
    )
    .delete(
      "/backends/saml",
      {
        summary: "Remove the tenant's SAML configuration",
        acl: "auth.backends.saml.delete",
        responses: { 204: "Removed (or there was none)" },
      },
      async ({ c, app, caller }) => {
        await deleteSamlConfig(app, caller);
        return c.body(null, 204);
      },
    )
    .get(
      "/backends/saml/metadata",
      {
        summary: "The stored IdP metadata (XML attachment)",
        acl: "auth.backends.saml.read",
        responses: { 200: { description: "IdP metadata", contentType: "application/xml" }, 404: "None" },
      },
      async ({ c, app, caller }) =>
        c.body(await getIdpMetadataXml(app, caller), 200, {
          "Content-Type": "application/xml",
          "Content-Disposition": 'attachment; filename="idp-metadata.xml"',
        }),
    )
    .get(
      "/backends/saml/sp_metadata",
      {
        summary: "Tessera's service-provider metadata for this tenant, to give the IdP (XML attachment)",
        acl: "auth.backends.saml.read",
        responses: { 200: { description: "SP metadata", contentType: "application/xml" }, 404: "None" },
      },
      async ({ c, app, caller }) => {
        const xml = await spMetadataXml(app, await samlConfigForTenant(app, caller), await spKeyPair(app));
        return c.body(xml, 200, {
          "Content-Type": "application/xml",
          "Content-Disposition": 'attachment; filename="sp-metadata.xml"',
        });
      },
    )
    .get(
      "/backends/saml/acs_url_template",
      {
        summary: "The ACS URL to configure, as a template",
        acl: "auth.backends.saml.read",
        responses: { 200: "`{acs_url}`" },
      },
      ({ c, app }) => c.json({ acs_url: app.config.saml.acs_url_template }),
    );
}
