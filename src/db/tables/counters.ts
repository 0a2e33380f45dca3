// Tessera addition: the number of users of each tenant, kept by a trigger on auth_user (migration
// tessera_user_count), so a list's `total` is a sum of a few rows instead of a count of every user.
import { integer, pgTable, varchar } from "drizzle-orm/pg-core";

export const tenantUserCounts = pgTable("tessera_tenant_user_count", {
  tenantUuid: varchar("tenant_uuid", { length: 38 }).primaryKey(),
  users: integer("users").notNull().default(0),
});
