// A tenant's branding of the hosted pages (Tessera addition, issue 43; services/identity/branding.ts).
import { pgTable, text, timestamp, varchar } from "drizzle-orm/pg-core";
import { tenants } from "./identity.ts";

export const tenantBranding = pgTable("tessera_tenant_branding", {
  tenantUuid: varchar("tenant_uuid", { length: 38 })
    .primaryKey()
    .references(() => tenants.uuid, { onDelete: "cascade" }),
  productName: text("product_name"),
  /** A `data:image/png|jpeg|webp;base64,…` URI (the pages load nothing from elsewhere). */
  logo: text("logo"),
  primaryColor: varchar("primary_color", { length: 7 }),
  backgroundColor: varchar("background_color", { length: 7 }),
  textColor: varchar("text_color", { length: 7 }),
  updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
});
