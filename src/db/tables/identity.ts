// Tenants, users, emails, groups, policies and their links (wazo-auth's data model).
import { sql } from "drizzle-orm";
import {
  boolean,
  check,
  index,
  integer,
  pgTable,
  primaryKey,
  serial,
  text,
  unique,
  uniqueIndex,
  varchar,
} from "drizzle-orm/pg-core";
import { bytea, uuidPk } from "./columns.ts";

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
  (t) => [
    unique("auth_tenant_slug_key").on(t.slug),
    index("auth_tenant_parent_uuid_idx").on(t.parentUuid),
    // GET /tenants walks it in the page's default order (name, then uuid) instead of sorting every tenant.
    index("auth_tenant_name_uuid_idx").on(t.name, t.uuid),
  ],
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
    // Tessera addition: the administrator who set the password requires a new one at the next
    // login (docs/security.md); cleared by any new password.
    passwordChangeRequired: boolean("password_change_required").notNull().default(false),
    // Tessera addition (issue 43): the user's language for the hosted pages and mails (BCP 47); null = none.
    locale: text("locale"),
  },
  (t) => [
    uniqueIndex("auth_user_username_lower_idx").on(sql`lower(${t.username})`),
    // Tessera addition: the PRECIS comparison key of usernames (services/login-names.ts). Not
    // unique: databases whose rows already collide must still migrate (`tessera users collisions`).
    index("auth_user_username_key_idx").on(sql`lower(normalize(${t.username}, NFKC))`),
    index("auth_user_tenant_uuid_idx").on(t.tenantUuid),
    index("auth_user_firstname_idx").on(t.firstname),
    index("auth_user_lastname_idx").on(t.lastname),
    // Tessera additions: a tenant's page in username order without a sort, and substring search
    // (`search=`, ILIKE '%…%') through trigram indexes (extension pg_trgm, migration 0005).
    index("auth_user_tenant_username_idx").on(t.tenantUuid, t.username, t.uuid),
    // Tessera addition (SCIM, migration 0033): a tenant's users of one purpose in uuid order, so a
    // deep `startIndex` walks this index alone (docs/scim.md).
    index("auth_user_tenant_purpose_uuid_idx").on(t.tenantUuid, t.purpose, t.uuid),
    index("auth_user_username_trgm_idx").using("gin", t.username.op("gin_trgm_ops")),
    index("auth_user_firstname_trgm_idx").using("gin", t.firstname.op("gin_trgm_ops")),
    index("auth_user_lastname_trgm_idx").using("gin", t.lastname.op("gin_trgm_ops")),
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
    index("auth_email_address_trgm_idx").using("gin", t.address.op("gin_trgm_ops")),
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
