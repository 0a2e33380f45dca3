// Tessera addition: the number of users of each tenant, kept by triggers on auth_user (migration
// user_count), so a list's `total` is a sum of a few rows instead of a count of every user. It is
// derived data, so it lives outside the `public` schema of wazo-auth's tables: imports and exports
// (db/transfer.ts) copy `public` only, and the triggers rebuild the counts from the rows copied.
import { bigint, integer, pgSchema, smallint, varchar } from "drizzle-orm/pg-core";

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
