// Tenant isolation (D9 of docs/wazo-auth-differences.md) in one place: what a caller may see from its scoping tenant. Inside a
// transaction, pass it as `db`: PGlite has one connection, so a query outside the transaction waits
// for it to end.
import { eq, sql, type SQL } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { users } from "../../db/schema.ts";
import type { Caller } from "../../domain/caller.ts";
import { NotFound } from "../../domain/errors.ts";
import { inSubtree, isSubtenant } from "./tenant-tree.ts";

/**
 * The condition "`column` is a tenant the list shows": the scoping tenant, plus its descendants
 * when `recurse`, as SQL (see inSubtree: never a parameter list).
 */
export function inCallerScope(app: AppContext, caller: Caller, recurse: boolean, column: AnyPgColumn | SQL): SQL {
  if (!caller.tenantUuid) return sql`false`;
  return recurse ? inSubtree(column, caller.tenantUuid, app.topTenantUuid) : sql`${column} = ${caller.tenantUuid}`;
}

/** True when `tenantUuid` is the caller's scoping tenant or one of its descendants. */
export async function tenantVisible(
  app: AppContext,
  caller: Caller,
  tenantUuid: string,
  db: DbOrTx = app.db,
): Promise<boolean> {
  return caller.tenantUuid !== null && isSubtenant(db, tenantUuid, caller.tenantUuid, app.topTenantUuid);
}

export type UserRow = typeof users.$inferSelect;

/** The user, when it lives in the caller's scoping tenant or below; else 404 (never a hint it exists). */
export async function requireVisibleUser(
  app: AppContext,
  caller: Caller,
  userUuid: string,
  db: DbOrTx = app.db,
  /** Lock the row (FOR UPDATE, in `db`'s transaction): the row read is the one the caller changes. */
  lock = false,
): Promise<UserRow> {
  const read = db.select().from(users).where(eq(users.uuid, userUuid));
  const [user] = await (lock ? read.for("update") : read);
  if (!user || !(await tenantVisible(app, caller, user.tenantUuid, db))) throw new NotFound("users", userUuid);
  return user;
}
