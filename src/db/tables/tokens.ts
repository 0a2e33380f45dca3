// Sessions, refresh tokens and access tokens (wazo-auth's sessions and tokens, data model).
import { sql } from "drizzle-orm";
import { boolean, index, integer, json, pgTable, text, timestamp, unique, varchar } from "drizzle-orm/pg-core";
import { uuidPk } from "./columns.ts";
import { tenants, users } from "./identity.ts";

export const sessions = pgTable(
  "auth_session",
  {
    uuid: uuidPk(),
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    mobile: boolean("mobile").notNull().default(false),
  },
  (t) => [index("auth_session_tenant_uuid_idx").on(t.tenantUuid)],
);

export const refreshTokens = pgTable(
  "auth_refresh_token",
  {
    uuid: uuidPk(),
    clientId: text("client_id").notNull(),
    userUuid: varchar("user_uuid", { length: 38 })
      .notNull()
      .references(() => users.uuid, { onDelete: "cascade" }),
    backend: text("backend"),
    login: text("login"),
    userAgent: text("user_agent"),
    remoteAddr: text("remote_addr"),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    mobile: boolean("mobile").notNull().default(false),
    metadata: json("metadata").notNull().default({}),
  },
  (t) => [
    unique("auth_refresh_token_client_id_user_uuid").on(t.clientId, t.userUuid),
    index("auth_refresh_token_user_idx").on(t.userUuid),
  ],
);

export const tokens = pgTable(
  "auth_token",
  {
    uuid: uuidPk(),
    authId: text("auth_id").notNull(),
    pbxUserUuid: varchar("pbx_user_uuid", { length: 38 }),
    xivoUuid: varchar("xivo_uuid", { length: 38 }),
    issuedT: integer("issued_t").notNull(),
    expireT: integer("expire_t").notNull(),
    metadata: text("metadata"),
    userAgent: text("user_agent").notNull().default(""),
    remoteAddr: text("remote_addr").notNull().default(""),
    acl: text("acl").array().notNull().default(sql`'{}'::text[]`),
    sessionUuid: varchar("session_uuid", { length: 38 })
      .notNull()
      .references(() => sessions.uuid, { onDelete: "cascade" }),
    refreshTokenUuid: varchar("refresh_token_uuid", { length: 38 }).references(() => refreshTokens.uuid, {
      onDelete: "set null",
    }),
    // Tessera addition: set once the expire-soon notice went out, so it is sent once per token
    // even with several instances running the cleanup job.
    expireSoonNotified: boolean("expire_soon_notified").notNull().default(false),
    // Tessera addition: the thumbprint of the DPoP key (RFC 9449 §6) an OIDC access token is bound
    // to, so the token check tells a bound token by one field of the cached token.
    dpopJkt: varchar("dpop_jkt", { length: 43 }),
  },
  (t) => [
    index("auth_token_expire_t_idx").on(t.expireT),
    index("auth_token_session_uuid_idx").on(t.sessionUuid),
    index("auth_token_auth_id_idx").on(t.authId),
    index("auth_token_refresh_token_idx").on(t.refreshTokenUuid),
  ],
);

/** A row of `auth_token` as read (the token lookups and the cache read it whole). */
export type TokenRow = typeof tokens.$inferSelect;
