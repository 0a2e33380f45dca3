// The per-tenant password policy (Tessera addition; services/identity/tenant-password-policy.ts).
import { sql } from "drizzle-orm";
import { check, integer, pgTable, timestamp, varchar } from "drizzle-orm/pg-core";
import { tenants } from "./identity.ts";

export const tenantPasswordPolicy = pgTable(
  "tessera_tenant_password_policy",
  {
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .primaryKey()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    minLength: integer("min_length").notNull(),
    /** The own tenant of the administrator who set it (null: gone, or none: the master's authority). */
    setByTenantUuid: varchar("set_by_tenant_uuid", { length: 38 }).references(() => tenants.uuid, {
      onDelete: "set null",
    }),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [check("tessera_tenant_password_policy_min_length_check", sql`${t.minLength} between 1 and 1024`)],
);
