// Per-tenant LDAP directory configuration (wazo-auth's backend and LDAP API): one row of auth_ldap_config per
// tenant, read and written for the caller's scoping tenant only (D9 of docs/wazo-auth-differences.md). The bind password is stored as
// wazo-auth stores it (its column, as given) so the database stays usable by wazo-auth after a
// rollback; it is write-only: no view, log or event ever carries it.
import { eq } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { ldapConfigs } from "../../db/schema.ts";
import type { Caller } from "../../domain/caller.ts";
import { NotFound } from "../../domain/errors.ts";
import { inTransaction } from "../../db/tx.ts";
import { changesOf, recordAudit, secretChange } from "../audit/record.ts";

export type LdapConfigRow = typeof ldapConfigs.$inferSelect;

/** The view of GET (and, later, of wazo-auth's PUT answer): everything but the bind password. */
export interface LdapConfigView {
  tenant_uuid: string | null;
  host: string | null;
  port: number | null;
  protocol_version: number | null;
  protocol_security: "ldaps" | "tls" | null;
  bind_dn: string | null;
  user_base_dn: string | null;
  user_login_attribute: string | null;
  user_email_attribute: string | null;
  search_filters: string | null;
}

export interface LdapConfigInput {
  host: string;
  port: number;
  protocol_version?: number;
  protocol_security?: "ldaps" | "tls" | null;
  bind_dn?: string | null;
  bind_password?: string | null;
  user_base_dn: string;
  user_login_attribute: string;
  user_email_attribute: string;
  search_filters?: string | null;
}

const EMPTY_VIEW: LdapConfigView = {
  tenant_uuid: null,
  host: null,
  port: null,
  protocol_version: null,
  protocol_security: null,
  bind_dn: null,
  user_base_dn: null,
  user_login_attribute: null,
  user_email_attribute: null,
  search_filters: null,
};

function view(row: LdapConfigRow | undefined): LdapConfigView {
  if (!row) return EMPTY_VIEW;
  return {
    tenant_uuid: row.tenantUuid,
    host: row.host,
    port: row.port,
    protocol_version: row.protocolVersion,
    protocol_security: (row.protocolSecurity as "ldaps" | "tls" | null) ?? null,
    bind_dn: row.bindDn,
    user_base_dn: row.userBaseDn,
    user_login_attribute: row.userLoginAttribute,
    user_email_attribute: row.userEmailAttribute,
    search_filters: row.searchFilters,
  };
}

function scopingTenant(caller: Caller): string {
  if (!caller.tenantUuid) throw new NotFound("ldap_config");
  return caller.tenantUuid;
}

/** The stored row of a tenant, bind password included: for the ldap_user backend only. */
export async function findLdapConfig(app: AppContext, tenantUuid: string): Promise<LdapConfigRow | null> {
  const [row] = await app.db.select().from(ldapConfigs).where(eq(ldapConfigs.tenantUuid, tenantUuid));
  return row ?? null;
}

/** GET /backends/ldap: the scoping tenant's configuration, every field null when there is none. */
export async function getLdapConfig(app: AppContext, caller: Caller): Promise<LdapConfigView> {
  return view((await findLdapConfig(app, scopingTenant(caller))) ?? undefined);
}

/**
 * PUT /backends/ldap: create or update the scoping tenant's configuration. As in wazo-auth, an
 * omitted optional field keeps its stored value (so the write-only bind password need not be sent
 * again), `null` clears it, and `protocol_version` defaults to 3.
 */
export async function putLdapConfig(app: AppContext, caller: Caller, input: LdapConfigInput): Promise<LdapConfigView> {
  const tenantUuid = scopingTenant(caller);
  const keep = <T>(given: T | undefined, stored: T | null | undefined): T | null =>
    given === undefined ? (stored ?? null) : given;
  const stored = await findLdapConfig(app, tenantUuid);
  const values = {
    host: input.host,
    port: input.port,
    protocolVersion: input.protocol_version ?? 3,
    protocolSecurity: keep(input.protocol_security, stored?.protocolSecurity as "ldaps" | "tls" | null | undefined),
    bindDn: keep(input.bind_dn, stored?.bindDn),
    bindPassword: keep(input.bind_password, stored?.bindPassword),
    userBaseDn: input.user_base_dn,
    userLoginAttribute: input.user_login_attribute,
    userEmailAttribute: input.user_email_attribute,
    searchFilters: keep(input.search_filters, stored?.searchFilters),
  };
  const row = await inTransaction(app, async (tx) => {
    const [saved] = await tx
      .insert(ldapConfigs)
      .values({ tenantUuid, ...values })
      .onConflictDoUpdate({ target: ldapConfigs.tenantUuid, set: values })
      .returning();
    const changes = changesOf(stored ? { ...view(stored) } : null, { ...view(saved) });
    if ((stored?.bindPassword ?? null) !== values.bindPassword) changes.push(secretChange("bind_password"));
    await recordAudit(app, tx, caller, {
      action: stored ? "ldap_config.update" : "ldap_config.create",
      target: { kind: "ldap_config", uuid: tenantUuid, tenantUuid },
      changes,
    });
    return saved;
  });
  app.log.info("ldap config saved", { tenant_uuid: tenantUuid, host: values.host, port: values.port });
  return view(row);
}

/** DELETE /backends/ldap: 204 whether or not there was one (D4 of docs/wazo-auth-differences.md). */
export async function deleteLdapConfig(app: AppContext, caller: Caller): Promise<void> {
  const tenantUuid = scopingTenant(caller);
  await inTransaction(app, async (tx) => {
    const [gone] = await tx.delete(ldapConfigs).where(eq(ldapConfigs.tenantUuid, tenantUuid)).returning();
    if (gone)
      await recordAudit(app, tx, caller, {
        action: "ldap_config.delete",
        target: { kind: "ldap_config", uuid: tenantUuid, tenantUuid },
        changes: changesOf({ ...view(gone) }, null),
      });
  });
}
