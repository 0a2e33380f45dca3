// The tenant a login request names (wazo-auth's identity-provider plugins step 1): `domain_name` (one of the
// tenant's domains, case-insensitive as DNS is), else the deprecated `tenant_id` (uuid or slug,
// anywhere in the tree — the caller is not authenticated yet, so there is no scoping tenant).
import { eq, or, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { tenantDomains, tenants } from "../../db/schema.ts";
import { isUuid } from "../../domain/validate.ts";

export async function findLoginTenant(app: AppContext, body: Record<string, unknown>): Promise<string | null> {
  const { domain_name: domainName, tenant_id: tenantId } = body;
  if (typeof domainName === "string" && domainName !== "") {
    const [row] = await app.db
      .select({ uuid: tenantDomains.tenantUuid })
      .from(tenantDomains)
      .where(sql`${tenantDomains.name} = lower(${domainName})`)
      .limit(1);
    return row?.uuid ?? null;
  }
  if (typeof tenantId === "string" && tenantId !== "") {
    const bySlug = eq(tenants.slug, tenantId);
    const [row] = await app.db
      .select({ uuid: tenants.uuid })
      .from(tenants)
      .where(isUuid(tenantId) ? or(eq(tenants.uuid, tenantId.toLowerCase()), bySlug) : bySlug)
      .limit(1);
    return row?.uuid ?? null;
  }
  return null;
}
