// External auth, LDAP and SAML configuration (wazo-auth's data model), and Tessera's own tables:
// the event outbox and pending OAuth2 authorizations.
import { sql } from "drizzle-orm";
import {
  bigserial,
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  varchar,
} from "drizzle-orm/pg-core";
import { uuidPk } from "./columns.ts";
import { tesseraSchema } from "./counters.ts";
import { tenantDomains, tenants, users } from "./identity.ts";
import { refreshTokens } from "./tokens.ts";

export const externalAuthTypes = pgTable("auth_external_auth_type", {
  uuid: uuidPk(),
  name: text("name").notNull().unique("auth_external_auth_type_name_key"),
  enabled: boolean("enabled").notNull().default(false),
});

export const userExternalAuths = pgTable(
  "auth_user_external_auth",
  {
    userUuid: varchar("user_uuid", { length: 38 })
      .notNull()
      .references(() => users.uuid, { onDelete: "cascade" }),
    externalAuthTypeUuid: varchar("external_auth_type_uuid", { length: 38 })
      .notNull()
      .references(() => externalAuthTypes.uuid, { onDelete: "cascade" }),
    data: text("data"),
  },
  (t) => [
    primaryKey({ columns: [t.userUuid, t.externalAuthTypeUuid] }),
    index("auth_user_external_auth_type_idx").on(t.externalAuthTypeUuid),
  ],
);

export const externalAuthConfigs = pgTable(
  "auth_external_auth_config",
  {
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    typeUuid: varchar("type_uuid", { length: 38 })
      .notNull()
      .references(() => externalAuthTypes.uuid, { onDelete: "cascade" }),
    data: text("data"),
  },
  (t) => [primaryKey({ columns: [t.tenantUuid, t.typeUuid] })],
);

export const ldapConfigs = pgTable(
  "auth_ldap_config",
  {
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .primaryKey()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    host: varchar("host", { length: 512 }).notNull(),
    port: integer("port").notNull(),
    protocolVersion: smallint("protocol_version").notNull().default(3),
    protocolSecurity: text("protocol_security"),
    bindDn: varchar("bind_dn", { length: 256 }),
    bindPassword: text("bind_password"),
    userBaseDn: varchar("user_base_dn", { length: 256 }).notNull(),
    userLoginAttribute: varchar("user_login_attribute", { length: 64 }).notNull(),
    userEmailAttribute: varchar("user_email_attribute", { length: 64 }).notNull(),
    searchFilters: text("search_filters"),
  },
  (t) => [check("auth_ldap_config_protocol_security_check", sql`${t.protocolSecurity} in ('ldaps', 'tls')`)],
);

export const samlConfigs = pgTable(
  "auth_saml_config",
  {
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    domainUuid: varchar("domain_uuid", { length: 38 })
      .notNull()
      .references(() => tenantDomains.uuid, { onDelete: "cascade" }),
    entityId: varchar("entity_id", { length: 512 }).notNull(),
    idpMetadata: text("idp_metadata").notNull(),
    acsUrl: varchar("acs_url", { length: 512 }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantUuid, t.domainUuid] })],
);

export const samlSessions = pgTable(
  "auth_saml_session",
  {
    requestId: varchar("request_id", { length: 40 }).notNull(),
    sessionId: varchar("session_id", { length: 22 }).notNull(),
    redirectUrl: text("redirect_url").notNull(),
    domain: text("domain").notNull(),
    relayState: text("relay_state").notNull(),
    login: text("login"),
    startTime: timestamp("start_time", { withTimezone: true, mode: "date" }).defaultNow(),
    samlNameId: text("saml_name_id"),
    refreshTokenUuid: varchar("refresh_token_uuid", { length: 38 }).references(() => refreshTokens.uuid, {
      onDelete: "set null",
    }),
  },
  (t) => [primaryKey({ columns: [t.requestId, t.sessionId] })],
);

export const samlPysaml2Cache = pgTable(
  "auth_saml_pysaml2_cache",
  {
    nameId: varchar("name_id", { length: 512 }).notNull(),
    entityId: varchar("entity_id", { length: 1024 }).notNull(),
    info: text("info").notNull(),
    notOnOrAfter: integer("not_on_or_after").notNull(),
  },
  (t) => [primaryKey({ columns: [t.nameId, t.entityId] })],
);

// Transactional outbox: every bus event is written here in the transaction of the change that
// causes it, then delivered to AMQP by the publisher. `aggregate` orders delivery per resource.
export const eventOutbox = pgTable(
  "tessera_event_outbox",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    name: text("name").notNull(),
    routingKey: text("routing_key").notNull(),
    headers: jsonb("headers").notNull(),
    payload: jsonb("payload").notNull(),
    aggregate: text("aggregate").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    claimedBy: text("claimed_by"),
    claimedUntil: timestamp("claimed_until", { withTimezone: true, mode: "date" }),
    publishedAt: timestamp("published_at", { withTimezone: true, mode: "date" }),
    attempts: integer("attempts").notNull().default(0),
  },
  (t) => [index("tessera_event_outbox_pending_idx").on(t.id).where(sql`${t.publishedAt} is null`)],
);

/**
 * The bus publishers listening for the outbox's NOTIFY, each refreshing its row every minute: while
 * none has for two minutes, the outbox's trigger notifies nothing (a notifying commit holds the
 * server's notification lock until its WAL flush; migration 0027).
 */
export const outboxListeners = tesseraSchema.table("outbox_listener", {
  instanceId: varchar("instance_id", { length: 64 }).primaryKey(),
  seenAt: timestamp("seen_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
});

// Pending OAuth2 authorizations of external-auth plugins, keyed by the `state` sent to the
// provider, so the callback may land on any instance.
export const oauth2States = pgTable("tessera_oauth2_state", {
  state: text("state").primaryKey(),
  authType: text("auth_type").notNull(),
  userUuid: varchar("user_uuid", { length: 38 })
    .notNull()
    .references(() => users.uuid, { onDelete: "cascade" }),
  tenantUuid: varchar("tenant_uuid", { length: 38 }).notNull(),
  extra: jsonb("extra").notNull().default([]),
  createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
});
