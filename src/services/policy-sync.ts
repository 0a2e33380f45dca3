// Groups and policies every tenant gets (COMPATIBILITY.md §11.1, §11.4), at tenant creation and at
// start-up. Owner: issue 3 (groups and policies); the start-up synchronisation is a placeholder.
import type { AppContext } from "../context.ts";
import type { DbOrTx } from "../db/index.ts";
import { groups } from "../db/schema.ts";

export const allUsersGroupName = (tenantUuid: string) => `wazo-all-users-tenant-${tenantUuid}`;

/**
 * Called by tenant creation inside its transaction: the system-managed all-users group (with the
 * `all_users_policies`) and the `tenant_default_groups` of the config.
 */
export async function setupTenantGroups(_app: AppContext, tx: DbOrTx, tenantUuid: string): Promise<void> {
  const name = allUsersGroupName(tenantUuid);
  await tx.insert(groups).values({ name, slug: name, tenantUuid, systemManaged: true });
}

export async function syncPoliciesOnStartup(_app: AppContext): Promise<void> {}
