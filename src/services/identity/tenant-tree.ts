// The tenant hierarchy (wazo-auth's tenant tree): the master tenant is the row with
// uuid == parent_uuid; a caller sees its scoping tenant and every descendant.
import { eq, sql, type SQL } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import { execRows, type DbOrTx } from "../../db/index.ts";
import { tenants, users } from "../../db/schema.ts";

export async function readTopTenantUuid(db: DbOrTx): Promise<string> {
  const rows = await db
    .select({ uuid: tenants.uuid })
    .from(tenants)
    .where(eq(tenants.uuid, tenants.parentUuid))
    .limit(1);
  const top = rows[0];
  if (!top) throw new Error("the master tenant is missing: the database was not migrated");
  return top.uuid;
}

/**
 * The condition "`column` is the tenant `rootUuid` or one of its descendants", computed by the
 * database: a subtree is never sent as a parameter list (100,000 tenants would pass PostgreSQL's
 * 65,535 bind parameters). It is one range of the materialised paths' index (drizzle/0011: the
 * paths below '/…/root/' sort in ['/…/root/', '/…/root0')), not a recursive walk of the tree.
 * The master tenant's subtree is every tenant: no condition.
 */
export function inSubtree(column: AnyPgColumn | SQL, rootUuid: string, topTenantUuid: string): SQL {
  if (rootUuid === topTenantUuid) return sql`${column} is not null`;
  return sql`${column} in (select p.tenant_uuid from tessera.tenant_path r join tessera.tenant_path p
    on p.path >= r.path and p.path < left(r.path, -1) || '0' where r.tenant_uuid = ${rootUuid})`;
}

/**
 * The number of tenants in `rootUuid`'s subtree (itself included), counted along the paths' index
 * (one range) rather than by joining the subtree to auth_tenant.
 */
export function subtreeCount(rootUuid: string, topTenantUuid: string): SQL<number> {
  if (rootUuid === topTenantUuid) return sql<number>`(select count(*)::int from auth_tenant)`;
  return sql<number>`(select count(*)::int from tessera.tenant_path r join tessera.tenant_path p
    on p.path >= r.path and p.path < left(r.path, -1) || '0' where r.tenant_uuid = ${rootUuid})`;
}

/** The tenant's ancestors, nearest first, up to and including the master tenant. */
export async function ancestorUuids(db: DbOrTx, tenantUuid: string): Promise<string[]> {
  const rows = await execRows<{ uuid: string; depth: number }>(
    db,
    sql`with recursive up(uuid, parent_uuid, depth) as (
          select t.uuid, t.parent_uuid, 0 from auth_tenant t where t.uuid = ${tenantUuid}
          union all
          select p.uuid, p.parent_uuid, up.depth + 1 from auth_tenant p join up on p.uuid = up.parent_uuid
          where up.uuid <> up.parent_uuid
        ) select uuid, depth from up where depth > 0 order by depth`,
  );
  return rows.map((r) => r.uuid);
}

/** is_subtenant(child, parent): true when equal, or `parent` is an ancestor of `child`. */
export async function isSubtenant(
  db: DbOrTx,
  childUuid: string,
  parentUuid: string,
  topTenantUuid: string,
): Promise<boolean> {
  if (childUuid === parentUuid) return await tenantExists(db, childUuid);
  if (!(await tenantExists(db, childUuid))) return false;
  if (parentUuid === topTenantUuid) return true;
  return (await ancestorUuids(db, childUuid)).includes(parentUuid);
}

export async function tenantExists(db: DbOrTx, uuid: string): Promise<boolean> {
  const rows = await db.select({ uuid: tenants.uuid }).from(tenants).where(eq(tenants.uuid, uuid)).limit(1);
  return rows.length > 0;
}

/** The current tenant of a user (null when the user no longer exists). */
export async function userTenantUuid(db: DbOrTx, userUuid: string): Promise<string | null> {
  const rows = await db.select({ tenantUuid: users.tenantUuid }).from(users).where(eq(users.uuid, userUuid)).limit(1);
  return rows[0]?.tenantUuid ?? null;
}
