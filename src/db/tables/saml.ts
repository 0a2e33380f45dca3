// Tessera's own SAML tables (the wazo-auth ones, auth_saml_*, are in integrations.ts): the service
// provider's signing key pair, shared by every instance, and what a SAML login needs for its logout.
import { sql } from "drizzle-orm";
import { check, index, pgTable, smallint, text, timestamp, varchar } from "drizzle-orm/pg-core";
import { sessions } from "./tokens.ts";

/** One row: the SP key pair generated on first use when `saml.key_file`/`cert_file` are unset. */
export const samlSpKeys = pgTable(
  "tessera_saml_sp_key",
  {
    id: smallint("id").primaryKey().default(1),
    privateKey: text("private_key").notNull(),
    certificate: text("certificate").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [check("tessera_saml_sp_key_single_row", sql`${t.id} = 1`)],
);

/**
 * The IdP session behind a token issued by a SAML login, for GET /saml/logout. Keyed by the
 * token's session: it disappears with the session (logout, expiry, user or tenant deleted).
 */
export const samlLogins = pgTable(
  "tessera_saml_login",
  {
    sessionUuid: varchar("session_uuid", { length: 38 })
      .primaryKey()
      .references(() => sessions.uuid, { onDelete: "cascade" }),
    domain: text("domain").notNull(),
    login: text("login").notNull(),
    nameId: text("name_id").notNull(),
    nameIdFormat: text("name_id_format"),
    sessionIndex: text("session_index"),
    redirectUrl: text("redirect_url").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [index("tessera_saml_login_created_idx").on(t.createdAt)],
);
