// Tessera addition: the number of users of each tenant, kept by triggers on auth_user (migration
// user_count), so a list's `total` is a sum of a few rows instead of a count of every user. It is
// derived data, so it lives outside the `public` schema of wazo-auth's tables: imports and exports
// (db/transfer.ts) copy `public` only, and the triggers rebuild the counts from the rows copied.
import { bigint, index, integer, pgSchema, smallint, varchar } from "drizzle-orm/pg-core";

export const tesseraSchema = pgSchema("tessera");

export const tenantUserCounts = tesseraSchema.table("tenant_user_count", {
  tenantUuid: varchar("tenant_uuid", { length: 38 }).primaryKey(),
  users: integer("users").notNull().default(0),
});

/**
 * Tessera addition: a number raised by every committed change of what the admin lists read
 * (migration list_version). A cached list page tagged with the number it was read under is still
 * exact while the number is unchanged (services/list-cache.ts). Derived data, outside `public`.
 */
export const listVersion = tesseraSchema.table("list_version", {
  id: smallint("id").primaryKey(),
  version: bigint("version", { mode: "number" }).notNull().default(0),
});

/**
 * Users added by a transaction not yet counted (migration scim_scale): an insert into auth_user notes
 * its delta here, and a deferred trigger folds the transaction's notes into tenant_user_count and
 * tenant_subtree_users at commit, so those rows are locked only while it commits. Empty between
 * transactions.
 */
export const userCountPending = tesseraSchema.table(
  "user_count_pending",
  {
    txid: bigint("txid", { mode: "number" }).notNull(),
    tenantUuid: varchar("tenant_uuid", { length: 38 }).notNull(),
    users: integer("users").notNull(),
  },
  (t) => [index("user_count_pending_txid_idx").on(t.txid)],
);
