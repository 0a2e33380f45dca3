// The whole data model of wazo-auth (COMPATIBILITY.md §8), column for column, so an existing
// wazo-auth database can be imported, plus Tessera's own tables (prefixed `tessera_`).
import { sql } from "drizzle-orm";
import {
  bigserial,
  boolean,
  customType,
  index,
  integer,
  json,
  jsonb,
  pgTable,
  primaryKey,
  serial,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  unique,
  varchar,
  check,
} from "drizzle-orm/pg-core";

const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => "bytea",
});

const uuidPk = () =>
  varchar("uuid", { length: 38 }).primaryKey().default(sql`gen_random_uuid()::text`);

export const tenants = pgTable(
  "auth_tenant",
  {
    uuid: uuidPk(),
    name: text("name"),
    slug: varchar("slug", { length: 10 }).notNull(),
    phone: text("phone"),
    contactUuid: varchar("contact_uuid", { length: 38 }).references((): any => users.uuid, {
      onDelete: "set null",
    }),
    parentUuid: varchar("parent_uuid", { length: 38 })
      .notNull()
      .references((): any => tenants.uuid),
    defaultAuthenticationMethod: text("default_authentication_method").notNull().default("native"),
  },
  (t) => [unique("auth_tenant_slug_key").on(t.slug), index("auth_tenant_parent_uuid_idx").on(t.parentUuid)],
);

export const tenantDomains = pgTable(
  "auth_tenant_domain",
  {
    uuid: uuidPk(),
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    name: varchar("name", { length: 253 }).notNull(),
  },
  (t) => [unique("auth_tenant_domain_name_key").on(t.name), index("auth_tenant_domain_tenant_idx").on(t.tenantUuid)],
);

export const addresses = pgTable(
  "auth_address",
  {
    id: serial("id").primaryKey(),
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    line1: text("line_1"),
    line2: text("line_2"),
    city: text("city"),
    state: text("state"),
    zipCode: text("zip_code"),
    country: text("country"),
  },
  (t) => [uniqueIndex("auth_address_tenant_uuid_key").on(t.tenantUuid)],
);

export const users = pgTable(
  "auth_user",
  {
    uuid: uuidPk(),
    username: varchar("username", { length: 256 }),
    passwordHash: text("password_hash"),
    passwordSalt: bytea("password_salt"),
    // Tessera addition: PBKDF2 iterations of this hash (null = wazo-auth's 250,000), so the cost
    // can be raised later and existing hashes still verify.
    passwordIterations: integer("password_iterations"),
    firstname: text("firstname"),
    lastname: text("lastname"),
    enabled: boolean("enabled").notNull().default(true),
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    purpose: text("purpose").notNull().default("user"),
    authenticationMethod: text("authentication_method").notNull().default("default"),
  },
  (t) => [
    uniqueIndex("auth_user_username_lower_idx").on(sql`lower(${t.username})`),
    index("auth_user_tenant_uuid_idx").on(t.tenantUuid),
    index("auth_user_firstname_idx").on(t.firstname),
    index("auth_user_lastname_idx").on(t.lastname),
    check("auth_user_purpose_check", sql`${t.purpose} in ('user', 'internal', 'external_api')`),
  ],
);

export const emails = pgTable(
  "auth_email",
  {
    uuid: uuidPk(),
    address: text("address").notNull(),
    confirmed: boolean("confirmed").notNull().default(false),
    main: boolean("main").notNull().default(false),
    userUuid: varchar("user_uuid", { length: 38 })
      .notNull()
      .references(() => users.uuid, { onDelete: "cascade" }),
  },
  (t) => [
    uniqueIndex("auth_email_address_lower_idx").on(sql`lower(${t.address})`),
    index("auth_email_user_uuid_idx").on(t.userUuid),
  ],
);

export const groups = pgTable(
  "auth_group",
  {
    uuid: uuidPk(),
    name: text("name").notNull(),
    slug: varchar("slug", { length: 80 }).notNull(),
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    systemManaged: boolean("system_managed").notNull().default(false),
  },
  (t) => [
    unique("auth_group_name_tenant").on(t.name, t.tenantUuid),
    uniqueIndex("auth_group_slug_tenant_idx").on(sql`lower(${t.slug})`, t.tenantUuid),
    index("auth_group_tenant_uuid_idx").on(t.tenantUuid),
  ],
);

export const policies = pgTable(
  "auth_policy",
  {
    uuid: uuidPk(),
    name: varchar("name", { length: 80 }).notNull(),
    slug: varchar("slug", { length: 80 }).notNull(),
    description: text("description"),
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    configManaged: boolean("config_managed").notNull().default(false),
    shared: boolean("shared").notNull().default(false),
  },
  (t) => [
    unique("auth_policy_name_tenant").on(t.name, t.tenantUuid),
    uniqueIndex("auth_policy_slug_tenant_idx").on(sql`lower(${t.slug})`, t.tenantUuid),
    index("auth_policy_tenant_uuid_idx").on(t.tenantUuid),
  ],
);

export const accesses = pgTable("auth_access", {
  id: serial("id").primaryKey(),
  access: text("access").notNull().unique("auth_access_access_key"),
});

export const policyAccesses = pgTable(
  "auth_policy_access",
  {
    policyUuid: varchar("policy_uuid", { length: 38 })
      .notNull()
      .references(() => policies.uuid, { onDelete: "cascade" }),
    accessId: integer("access_id")
      .notNull()
      .references(() => accesses.id, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.policyUuid, t.accessId] })],
);

export const groupPolicies = pgTable(
  "auth_group_policy",
  {
    groupUuid: varchar("group_uuid", { length: 38 })
      .notNull()
      .references(() => groups.uuid, { onDelete: "cascade" }),
    policyUuid: varchar("policy_uuid", { length: 38 })
      .notNull()
      .references(() => policies.uuid, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.groupUuid, t.policyUuid] }), index("auth_group_policy_policy_idx").on(t.policyUuid)],
);

export const userGroups = pgTable(
  "auth_user_group",
  {
    groupUuid: varchar("group_uuid", { length: 38 })
      .notNull()
      .references(() => groups.uuid, { onDelete: "cascade" }),
    userUuid: varchar("user_uuid", { length: 38 })
      .notNull()
      .references(() => users.uuid, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.groupUuid, t.userUuid] }), index("auth_user_group_user_idx").on(t.userUuid)],
);

export const userPolicies = pgTable(
  "auth_user_policy",
  {
    userUuid: varchar("user_uuid", { length: 38 })
      .notNull()
      .references(() => users.uuid, { onDelete: "cascade" }),
    policyUuid: varchar("policy_uuid", { length: 38 })
      .notNull()
      .references(() => policies.uuid, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.userUuid, t.policyUuid] }), index("auth_user_policy_policy_idx").on(t.policyUuid)],
);

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
  (t) => [unique("auth_refresh_token_client_id_user_uuid").on(t.clientId, t.userUuid), index("auth_refresh_token_user_idx").on(t.userUuid)],
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
  },
  (t) => [
    index("auth_token_expire_t_idx").on(t.expireT),
    index("auth_token_session_uuid_idx").on(t.sessionUuid),
    index("auth_token_auth_id_idx").on(t.authId),
    index("auth_token_refresh_token_idx").on(t.refreshTokenUuid),
  ],
);

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
  (t) => [primaryKey({ columns: [t.userUuid, t.externalAuthTypeUuid] }), index("auth_user_external_auth_type_idx").on(t.externalAuthTypeUuid)],
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
