// Tessera addition: the number of users of each tenant, kept by triggers on auth_user (migration
// user_count), so a list's `total` is a sum of a few rows instead of a count of every user. It is
// derived data, so it lives outside the `public` schema of wazo-auth's tables: imports and exports
// (db/transfer.ts) copy `public` only, and the triggers rebuild the counts from the rows copied.
import { integer, pgSchema, varchar } from "drizzle-orm/pg-core";

export const tesseraSchema = pgSchema("tessera");

export const tenantUserCounts = tesseraSchema.table("tenant_user_count", {
  tenantUuid: varchar("tenant_uuid", { length: 38 }).primaryKey(),
  users: integer("users").notNull().default(0),
});
