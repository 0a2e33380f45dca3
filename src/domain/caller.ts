// Who a request acts for, as the services see it: resolved once by the route pipeline (http/auth.ts)
// from the token and `Wazo-Tenant`, then handed to every service function.
import type { CachedToken } from "../services/auth/token-cache.ts";

export interface Caller {
  token: CachedToken;
  /** `metadata.uuid` of the token: the user behind it, if any. */
  userUuid: string | null;
  /** The tenant the request acts in (§2.4). Null only for tokens with no tenant (email/reset tokens). */
  tenantUuid: string | null;
  /** The caller's own tenant (its user's current tenant, else the token's `metadata.tenant_uuid`). */
  ownTenantUuid: string | null;
  /** Where the request came from (the trusted-proxy-aware address, http/request-origin.ts), for the audit trail. */
  origin?: { address: string; userAgent: string };
}
