// The policies Tessera ships, as wazo-auth ships its default policies: created and kept up to date
// by the service at every start, in the master tenant, read-only (config-managed) and visible to
// every tenant, so that a new tenant's administrator is one policy attachment away. The grant rule
// still applies to attaching them: giving `tessera_tenant_admin` takes a caller holding its entries.
import type { AppContext } from "../../boot/context.ts";
import { MFA_SELF_SERVICE_ACL } from "../auth/mfa-policy.ts";

/** A user's own account, to attach to users or groups (every user: `all_users_policies: {tessera_user: true}`). */
export const STOCK_USER_POLICY = "tessera_user";
export const STOCK_TENANT_ADMIN_POLICY = "tessera_tenant_admin";
export const STOCK_AUDITOR_POLICY = "tessera_auditor";

export interface StockPolicy {
  description: string;
  acl: string[];
}

/**
 * The user's own account: its profile (read), password (the old one is still asked), sessions and
 * refresh tokens, and — with `mfa.self_service` — its second factors (a removal still asks a proof).
 * Never `auth.users.me.update`: a user does not choose its own purpose or enable itself.
 */
const userAcl = (app: AppContext): string[] => [
  "auth.users.me.read",
  "auth.users.me.password.update",
  "auth.users.me.sessions.read",
  "auth.users.me.sessions.*.delete",
  "auth.users.me.tokens.read",
  "auth.users.me.tokens.*.delete",
  ...(app.config.mfa.self_service ? [MFA_SELF_SERVICE_ACL] : []),
];

export function stockPolicies(app: AppContext): Record<string, StockPolicy> {
  return {
    [STOCK_USER_POLICY]: {
      description: "Stock: a user's own account (profile, password, sessions, second factors)",
      acl: userAcl(app),
    },
    [STOCK_TENANT_ADMIN_POLICY]: {
      description:
        "Stock: administrator of the tenant its holder belongs to and of its sub-tenants (every auth resource there)",
      acl: ["auth.#"],
    },
    [STOCK_AUDITOR_POLICY]: {
      description: "Stock: reads every auth resource of its holder's tenant and sub-tenants, the audit trail included",
      acl: ["auth.#.read"],
    },
  };
}

export const isStockPolicy = (slug: string): boolean =>
  slug === STOCK_USER_POLICY || slug === STOCK_TENANT_ADMIN_POLICY || slug === STOCK_AUDITOR_POLICY;
