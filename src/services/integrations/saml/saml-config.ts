// Per-tenant SAML configuration (wazo-auth's SAML configuration API, D9 of docs/wazo-auth-differences.md): one identity provider per tenant,
// bound to one of the tenant's domains. Always read from the database, so a change made through
// any instance applies at once on every instance.
import { and, eq, sql } from "drizzle-orm";
import type { AppContext } from "../../../boot/context.ts";
import { samlConfigs, tenantDomains } from "../../../db/schema.ts";
import { inTransaction } from "../../../db/tx.ts";
import { realmsChanged } from "../home-realm.ts";
import { changesOf, recordAudit, type AuditEntry } from "../../audit/record.ts";
import type { Caller } from "../../../domain/caller.ts";
import { Conflict, InvalidData, NotFound, type Details } from "../../../domain/errors.ts";
import type { IdpMetadata } from "./idp-metadata.ts";

/**
 * The IdP metadata parser and its XML libraries (xmldom, xpath: a tenth of the service's
 * JavaScript), loaded with the first SAML configuration read or written: a service without SAML
 * never holds them (issue 28, idle memory).
 */
const metadataParser = () => import("./idp-metadata.ts");

const RESOURCE = "saml_config";

export interface SamlConfigView {
  tenant_uuid: string;
  domain_uuid: string;
  entity_id: string;
  acs_url: string;
}

export interface SamlConfigInput {
  domain_uuid?: string;
  entity_id?: string;
  acs_url?: string;
  /** The IdP metadata file's text (undefined = not sent). */
  metadata?: string;
}

export interface ResolvedSamlConfig {
  tenantUuid: string;
  domain: string;
  entityId: string;
  acsUrl: string;
  idp: IdpMetadata;
}

type Row = typeof samlConfigs.$inferSelect;

const view = (r: Row): SamlConfigView => ({
  tenant_uuid: r.tenantUuid,
  domain_uuid: r.domainUuid,
  entity_id: r.entityId,
  acs_url: r.acsUrl,
});

/** The IdP metadata (an XML document, often large) is recorded by name only when it changes. */
function samlAudit(action: string, before: Row | null, after: Row | null): AuditEntry {
  const tenantUuid = (after ?? before)!.tenantUuid;
  const changes = changesOf(before && { ...view(before) }, after && { ...view(after) });
  if (before?.idpMetadata !== after?.idpMetadata) changes.push({ field: "metadata", old: null, new: null });
  return { action, target: { kind: "saml_config", uuid: tenantUuid, tenantUuid }, changes };
}

function scope(caller: Caller): string {
  if (!caller.tenantUuid) throw new NotFound(RESOURCE, undefined, "No SAML configuration");
  return caller.tenantUuid;
}

async function findRow(app: AppContext, tenantUuid: string): Promise<Row | undefined> {
  const [row] = await app.db.select().from(samlConfigs).where(eq(samlConfigs.tenantUuid, tenantUuid)).limit(1);
  return row;
}

async function requireRow(app: AppContext, caller: Caller): Promise<Row> {
  const tenantUuid = scope(caller);
  const row = await findRow(app, tenantUuid);
  if (!row) throw new NotFound(RESOURCE, tenantUuid, "No SAML configuration for this tenant");
  return row;
}

export async function getSamlConfig(app: AppContext, caller: Caller): Promise<SamlConfigView> {
  return view(await requireRow(app, caller));
}

export async function getIdpMetadataXml(app: AppContext, caller: Caller): Promise<string> {
  return (await requireRow(app, caller)).idpMetadata;
}

/** Checks the metadata and that the domain is one of the tenant's; all problems in one 400. */
async function validate(
  app: AppContext,
  tenantUuid: string,
  input: SamlConfigInput,
  metadataRequired: boolean,
): Promise<void> {
  const details: Details = {};
  if (input.metadata === undefined) {
    if (metadataRequired)
      details.metadata = { constraint_id: "required", constraint: true, message: "No metadata file provided." };
  } else if (input.metadata.trim() === "") {
    details.metadata = { constraint_id: "not_empty", constraint: true, message: "Empty metadata file provided." };
  } else {
    const { InvalidMetadata, parseIdpMetadata } = await metadataParser();
    try {
      parseIdpMetadata(input.metadata);
    } catch (e) {
      const message = e instanceof InvalidMetadata ? e.message : "unreadable";
      details.metadata = {
        constraint_id: "saml_metadata",
        constraint: "IdP metadata (IDPSSODescriptor)",
        message: `Invalid IdP metadata: ${message}.`,
      };
    }
  }
  if (input.domain_uuid !== undefined) {
    const [domain] = await app.db
      .select({ uuid: tenantDomains.uuid })
      .from(tenantDomains)
      .where(and(eq(tenantDomains.uuid, input.domain_uuid), eq(tenantDomains.tenantUuid, tenantUuid)));
    if (!domain)
      details.domain_uuid = {
        constraint_id: "tenant_domain",
        constraint: tenantUuid,
        message: "Domain not from tenant.",
      };
  }
  if (Object.keys(details).length) throw new InvalidData(RESOURCE, details);
}

export async function createSamlConfig(
  app: AppContext,
  caller: Caller,
  input: Required<SamlConfigInput>,
): Promise<SamlConfigView> {
  const tenantUuid = scope(caller);
  await validate(app, tenantUuid, input, true);
  return inTransaction(app, async (tx) => {
    // One configuration per tenant: serialise concurrent creations for the tenant (the key is
    // (tenant, domain), so a unique violation would not catch two different domains).
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`saml_config:${tenantUuid}`}))`);
    const [existing] = await tx
      .select({ t: samlConfigs.tenantUuid })
      .from(samlConfigs)
      .where(eq(samlConfigs.tenantUuid, tenantUuid));
    if (existing)
      throw new Conflict(RESOURCE, {
        tenant_uuid: { constraint_id: "unique", message: "This tenant already has a SAML configuration" },
      });
    const [row] = await tx
      .insert(samlConfigs)
      .values({
        tenantUuid,
        domainUuid: input.domain_uuid,
        entityId: input.entity_id,
        acsUrl: input.acs_url,
        idpMetadata: input.metadata,
      })
      .returning();
    await recordAudit(app, tx, caller, samlAudit("saml_config.create", null, row!));
    await realmsChanged(app, tx);
    return view(row!);
  });
}

/** PUT: the fields sent replace the stored ones; the metadata file is optional. */
export async function updateSamlConfig(app: AppContext, caller: Caller, input: SamlConfigInput): Promise<void> {
  const current = await requireRow(app, caller);
  await validate(app, current.tenantUuid, input, false);
  await inTransaction(app, async (tx) => {
    const [row] = await tx
      .update(samlConfigs)
      .set({
        domainUuid: input.domain_uuid ?? current.domainUuid,
        entityId: input.entity_id ?? current.entityId,
        acsUrl: input.acs_url ?? current.acsUrl,
        idpMetadata: input.metadata ?? current.idpMetadata,
      })
      .where(and(eq(samlConfigs.tenantUuid, current.tenantUuid), eq(samlConfigs.domainUuid, current.domainUuid)))
      .returning();
    if (row) await recordAudit(app, tx, caller, samlAudit("saml_config.update", current, row));
    await realmsChanged(app, tx);
  });
}

export async function deleteSamlConfig(app: AppContext, caller: Caller): Promise<void> {
  await inTransaction(app, async (tx) => {
    const gone = await tx
      .delete(samlConfigs)
      .where(eq(samlConfigs.tenantUuid, scope(caller)))
      .returning();
    for (const row of gone) await recordAudit(app, tx, caller, samlAudit("saml_config.delete", row, null));
    if (gone.length) await realmsChanged(app, tx);
  });
}

/** The configuration serving a login domain (POST /saml/sso, the ACS, logout), or null. */
export async function samlConfigForDomain(app: AppContext, domain: string): Promise<ResolvedSamlConfig | null> {
  const [row] = await app.db
    .select({ config: samlConfigs, domain: tenantDomains.name })
    .from(samlConfigs)
    .innerJoin(tenantDomains, eq(tenantDomains.uuid, samlConfigs.domainUuid))
    .where(sql`lower(${tenantDomains.name}) = ${domain.toLowerCase().replace(/\.$/, "")}`)
    .limit(1);
  if (!row) return null;
  const { parseIdpMetadata } = await metadataParser();
  try {
    const idp = parseIdpMetadata(row.config.idpMetadata);
    return {
      tenantUuid: row.config.tenantUuid,
      domain: row.domain,
      entityId: row.config.entityId,
      acsUrl: row.config.acsUrl,
      idp,
    };
  } catch (e) {
    app.log.error("stored SAML metadata is unreadable", {
      tenant_uuid: row.config.tenantUuid,
      error: (e as Error).message,
    });
    return null;
  }
}

/** A tenant's SAML login domain (its configuration's), or null when it has none. */
export async function samlDomainOfTenant(app: AppContext, tenantUuid: string): Promise<string | null> {
  const [row] = await app.db
    .select({ name: tenantDomains.name })
    .from(samlConfigs)
    .innerJoin(tenantDomains, eq(tenantDomains.uuid, samlConfigs.domainUuid))
    .where(eq(samlConfigs.tenantUuid, tenantUuid))
    .limit(1);
  return row?.name ?? null;
}

/** The scoping tenant's configuration with its IdP metadata read (SP metadata needs both). */
export async function samlConfigForTenant(app: AppContext, caller: Caller): Promise<ResolvedSamlConfig> {
  const row = await requireRow(app, caller);
  const [domain] = await app.db
    .select({ name: tenantDomains.name })
    .from(tenantDomains)
    .where(eq(tenantDomains.uuid, row.domainUuid));
  const resolved = domain ? await samlConfigForDomain(app, domain.name) : null;
  if (!resolved) throw new NotFound(RESOURCE, row.tenantUuid, "No usable SAML configuration for this tenant");
  return resolved;
}
