// Who is calling: the token (X-Auth-Token or Authorization: Bearer), its ACL against the route's
// required access, and the scoping tenant as wazo-auth picks it (`Wazo-Tenant`).
import type { Context } from "hono";
import type { AppContext } from "../boot/context.ts";
import { fillAcl } from "../domain/acl.ts";
import { findValidToken } from "../services/auth/tokens.ts";
import { isSubtenant, tenantExists, userTenantUuid } from "../services/identity/tenant-tree.ts";
import type { CachedToken } from "../services/auth/token-cache.ts";
import { ApiError, NotFound, Unauthorized, UnauthorizedTenant } from "../domain/errors.ts";
import type { Caller } from "../domain/caller.ts";

/** The bearer token of a request: `X-Auth-Token`, else `Authorization: Bearer` (D14 of docs/wazo-auth-differences.md). */
export function requestToken(c: Context, fromQuery = false): string {
  if (fromQuery) {
    const q = c.req.query("token");
    if (q) return q;
  }
  const header = c.req.header("X-Auth-Token");
  if (header) return header.trim();
  const authz = c.req.header("Authorization");
  if (authz && /^bearer\s+/i.test(authz)) return authz.replace(/^bearer\s+/i, "").trim();
  return "";
}

/** 401 for a missing, unknown or expired token; 403 when it lacks `requiredAccess` (D2 of docs/wazo-auth-differences.md). */
export async function authenticate(
  app: AppContext,
  token: string,
  requiredAccess: string | null,
): Promise<CachedToken> {
  const tok = token ? await findValidToken(app, token) : null;
  if (!tok) {
    throw new Unauthorized({ reason: "not_found_or_expired", required_access: requiredAccess });
  }
  // RFC 9449 §7.2: a DPoP-bound token is no bearer token; the REST API takes no proof (one field test).
  if (tok.dpopJkt !== null) throw new Unauthorized({ reason: "dpop_bound_token", required_access: requiredAccess });
  if (requiredAccess !== null && !tok.matcher.matches(requiredAccess)) {
    throw new ApiError(403, "forbidden", "Forbidden", "tokens", {
      reason: "missing_permission",
      required_access: requiredAccess,
    });
  }
  return tok;
}

/**
 * §2.4: own tenant = the user's current tenant (else metadata.tenant_uuid); `Wazo-Tenant` may narrow
 * it to a descendant. No database round trip when nothing changed: a user never changes tenant and
 * deleting a user (or its tenant) revokes its tokens, which evicts them from every instance's cache
 * (NOTIFY), so the tenant read once per cached token stays right for the token's life; the tenant
 * tree is the in-memory copy the token check uses, refreshed on every change of `auth_tenant`. A
 * tenant missing from that copy (created an instant ago, the NOTIFY not yet here) is looked up in
 * the database before the request is refused.
 */
export async function resolveCaller(
  app: AppContext,
  tok: CachedToken,
  wazoTenant: string | undefined,
): Promise<Caller> {
  const userUuid = typeof tok.metadata.uuid === "string" ? tok.metadata.uuid : null;
  let ownTenantUuid: string | null;
  if (userUuid) {
    tok.userTenantUuid ??= await userTenantUuid(app.db, userUuid);
    ownTenantUuid = tok.userTenantUuid;
    if (!ownTenantUuid) throw new NotFound("users", userUuid);
  } else {
    ownTenantUuid = typeof tok.metadata.tenant_uuid === "string" ? tok.metadata.tenant_uuid : null;
  }
  const header = wazoTenant?.trim();
  if (!header || header === ownTenantUuid) return { token: tok, userUuid, tenantUuid: ownTenantUuid, ownTenantUuid };
  const allowed =
    ownTenantUuid !== null &&
    ((await app.tenantTree.isSubtenant(app.db, header, ownTenantUuid)) ||
      ((await tenantExists(app.db, header)) && (await isSubtenant(app.db, header, ownTenantUuid, app.topTenantUuid))));
  if (!allowed) throw new UnauthorizedTenant(header);
  return { token: tok, userUuid, tenantUuid: header, ownTenantUuid };
}

export function requiredAccess(aclTemplate: string, params: Record<string, string>): string {
  return fillAcl(aclTemplate, params);
}
