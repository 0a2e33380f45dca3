// Upstream OpenID Connect providers (Tessera addition; services/integrations/upstream-oidc/): the
// providers a tenant's users sign in with, the links between their accounts and the upstream
// subjects, and the sign-ins under way (state, nonce, PKCE verifier: OIDC Core §3.1.2.1, RFC 7636).
import { sql } from "drizzle-orm";
import { index, jsonb, pgTable, primaryKey, text, timestamp, unique, varchar } from "drizzle-orm/pg-core";
import { uuidPk } from "./columns.ts";
import { tenants, users } from "./identity.ts";

export const upstreamOidcProviders = pgTable(
  "tessera_upstream_oidc_provider",
  {
    uuid: uuidPk(),
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    name: text("name").notNull(),
    displayName: text("display_name").notNull(),
    /** `oidc` (generic), `google`, `entra` (a preset with its quirks). */
    preset: text("preset").notNull().default("oidc"),
    issuer: text("issuer").notNull(),
    clientId: text("client_id").notNull(),
    /** Needed in clear to authenticate at the upstream token endpoint; never returned by the API. */
    clientSecret: text("client_secret").notNull(),
    scopes: text("scopes").array().notNull(),
    /** Client ids of the tenant's native applications at the provider: their ID tokens may log in (`idp_token`). */
    nativeClientIds: text("native_client_ids").array().notNull().default(sql`'{}'::text[]`),
    /** `create` (JIT), `link` (existing accounts only), `off` (sign-in disabled). */
    provisioning: text("provisioning").notNull(),
    claimMapping: jsonb("claim_mapping").$type<Record<string, string>>().notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [
    unique("tessera_upstream_oidc_provider_name_key").on(t.tenantUuid, t.name),
    index("tessera_upstream_oidc_provider_tenant_idx").on(t.tenantUuid),
  ],
);

/** A user's account at an upstream provider: one per (provider, upstream `sub`) (OIDC Core §2: sub is unique per issuer). */
export const upstreamOidcLinks = pgTable(
  "tessera_upstream_oidc_link",
  {
    providerUuid: varchar("provider_uuid", { length: 38 })
      .notNull()
      .references(() => upstreamOidcProviders.uuid, { onDelete: "cascade" }),
    subject: text("subject").notNull(),
    userUuid: varchar("user_uuid", { length: 38 })
      .notNull()
      .references(() => users.uuid, { onDelete: "cascade" }),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.providerUuid, t.subject] }),
    index("tessera_upstream_oidc_link_user_idx").on(t.userUuid),
  ],
);

/**
 * A sign-in through an upstream provider, from the button to the login it becomes. Keyed by the
 * hash of `state`; bound to the browser that started it (the hash of its cookie); used once. Once
 * the upstream answered and the user is known, `user_uuid` and the hash of a one-time completion
 * secret are set: the `oidc` identity provider (plugins/idp/oidc.ts) takes it, once, to log in.
 */
export const upstreamOidcLogins = pgTable(
  "tessera_upstream_oidc_login",
  {
    stateHash: text("state_hash").primaryKey(),
    providerUuid: varchar("provider_uuid", { length: 38 })
      .notNull()
      .references(() => upstreamOidcProviders.uuid, { onDelete: "cascade" }),
    browserHash: text("browser_hash").notNull(),
    nonce: text("nonce").notNull(),
    codeVerifier: text("code_verifier").notNull(),
    /** The authorization request of Tessera's client, resumed on return. */
    params: jsonb("params").$type<Record<string, string>>().notNull(),
    userUuid: varchar("user_uuid", { length: 38 }).references(() => users.uuid, { onDelete: "cascade" }),
    /** The upstream `sub`, once verified (a link to make once the user proved the existing account). */
    subject: text("subject"),
    /**
     * The existing account of the verified email, awaiting its password on the page shown on return
     * (docs/federation.md "Accounts"); linked only once that sign-in succeeded.
     */
    linkUserUuid: varchar("link_user_uuid", { length: 38 }).references(() => users.uuid, { onDelete: "cascade" }),
    completionHash: text("completion_hash"),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [
    unique("tessera_upstream_oidc_login_completion_key").on(t.completionHash),
    index("tessera_upstream_oidc_login_expires_idx").on(t.expiresAt),
  ],
);

/**
 * ID tokens already used at POST /0.1/token (`idp_token`): the hash of each, kept until it expires,
 * so a token that leaked (a log, a proxy) logs nobody in a second time.
 */
export const upstreamOidcTokenUses = pgTable(
  "tessera_upstream_oidc_token_use",
  {
    tokenHash: text("token_hash").primaryKey(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("tessera_upstream_oidc_token_use_expires_idx").on(t.expiresAt)],
);
