// SCIM 2.0 tables (Tessera's own; services/scim/, docs/scim.md): the tenants' directory tokens, and
// what a directory sends about a user or a group that the wazo-auth schema has no column for.
import { index, jsonb, pgTable, text, timestamp, uniqueIndex, varchar } from "drizzle-orm/pg-core";
import { uuidPk } from "./columns.ts";
import { groups, tenants, users } from "./identity.ts";

/** A long-lived bearer token of a tenant's directory: only SHA-256 of its secret is kept. */
export const scimTokens = pgTable(
  "tessera_scim_token",
  {
    uuid: uuidPk(),
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    name: text("name").notNull(),
    tokenHash: text("token_hash").notNull(),
    /** What the token may do, granted by its creator under the grant rule (default `auth.scim.#`). */
    acl: text("acl").array().notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    /** The user who created it (null: gone, or made by the CLI). */
    createdBy: varchar("created_by", { length: 38 }),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [
    uniqueIndex("tessera_scim_token_hash_idx").on(t.tokenHash),
    index("tessera_scim_token_tenant_idx").on(t.tenantUuid),
  ],
);

/** A user as its directory knows it: `externalId` and the attributes no auth_user column holds. */
export const scimUsers = pgTable(
  "tessera_scim_user",
  {
    userUuid: varchar("user_uuid", { length: 38 })
      .primaryKey()
      .references(() => users.uuid, { onDelete: "cascade" }),
    tenantUuid: varchar("tenant_uuid", { length: 38 }).notNull(),
    externalId: text("external_id"),
    attributes: jsonb("attributes").$type<Record<string, unknown>>().notNull().default({}),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [index("tessera_scim_user_external_idx").on(t.tenantUuid, t.externalId)],
);

/** A group as its directory knows it. */
export const scimGroups = pgTable(
  "tessera_scim_group",
  {
    groupUuid: varchar("group_uuid", { length: 38 })
      .primaryKey()
      .references(() => groups.uuid, { onDelete: "cascade" }),
    tenantUuid: varchar("tenant_uuid", { length: 38 }).notNull(),
    externalId: text("external_id"),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [index("tessera_scim_group_external_idx").on(t.tenantUuid, t.externalId)],
);
