// Upstream OpenID Connect providers (Tessera addition; services/integrations/upstream-oidc/): the
// providers a tenant's users sign in with, the links between their accounts and the upstream
// subjects, and the sign-ins under way (state, nonce, PKCE verifier: OIDC Core §3.1.2.1, RFC 7636).
import { sql } from "drizzle-orm";
import { boolean, index, jsonb, pgTable, primaryKey, text, timestamp, unique, varchar } from "drizzle-orm/pg-core";
import { uuidPk } from "./columns.ts";
import { tenants, users } from "./identity.ts";
import { oidcBrowserSessions } from "./oidc.ts";

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
    /** Logging out at Tessera logs out at the provider too (RP-Initiated Logout 1.0), when its discovery has an end_session_endpoint. */
    upstreamLogout: boolean("upstream_logout").notNull().default(false),
    /**
     * The provider's `amr` (RFC 8176) vouches for the second factor: an ID token that shows a multi-factor
     * authentication meets the tenant's MFA requirement (services/integrations/upstream-oidc/amr.ts).
     */
    trustAmr: boolean("trust_amr").notNull().default(false),
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
    /** The verified ID token's `amr` (RFC 8176 §2), read by the login when the provider trusts it (migration 0047). */
    amr: text("amr").array(),
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

/**
 * An upstream provider's session behind a Tessera browser session (services/integrations/upstream-oidc/logout.ts):
 * the provider's `sub` and `sid` (its back-channel logout token names them, Back-Channel Logout 1.0 §2.4) and,
 * only for a provider with `upstream_logout`, its ID token: RP-Initiated Logout 1.0 §2 wants it as the
 * `id_token_hint` of the logout request, which the provider may need to know which session to end. The ID
 * token is kept no longer than the browser session (the foreign key's cascade deletes the row with it); a
 * sign-in that never became a browser session (`completion_hash` set, no browser session) goes at `expires_at`.
 */
export const upstreamOidcSessions = pgTable(
  "tessera_upstream_oidc_session",
  {
    uuid: uuidPk(),
    providerUuid: varchar("provider_uuid", { length: 38 })
      .notNull()
      .references(() => upstreamOidcProviders.uuid, { onDelete: "cascade" }),
    subject: text("subject").notNull(),
    sid: text("sid"),
    idToken: text("id_token"),
    /** The completed sign-in (upstreamOidcLogins) it came from, until it becomes a browser session. */
    completionHash: text("completion_hash"),
    browserSessionId: varchar("browser_session_id", { length: 38 }).references(() => oidcBrowserSessions.id, {
      onDelete: "cascade",
    }),
    /** The Tessera session of the sign-in itself (later single sign-ons' are found through the browser session). */
    sessionUuid: varchar("session_uuid", { length: 38 }),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [
    unique("tessera_upstream_oidc_session_completion_key").on(t.completionHash),
    index("tessera_upstream_oidc_session_sid_idx").on(t.providerUuid, t.sid),
    index("tessera_upstream_oidc_session_subject_idx").on(t.providerUuid, t.subject),
    index("tessera_upstream_oidc_session_browser_idx").on(t.browserSessionId),
    index("tessera_upstream_oidc_session_expires_idx").on(t.expiresAt),
  ],
);

/**
 * A logout sent on to a provider's end_session_endpoint (RP-Initiated Logout 1.0 §2), keyed by the hash of
 * its `state`: where the browser continues when the provider sends it back (§3), used once.
 */
export const upstreamOidcLogouts = pgTable(
  "tessera_upstream_oidc_logout",
  {
    stateHash: text("state_hash").primaryKey(),
    providerUuid: varchar("provider_uuid", { length: 38 })
      .notNull()
      .references(() => upstreamOidcProviders.uuid, { onDelete: "cascade" }),
    /** Tessera's relying party's registered post_logout_redirect_uri with its `state`; null: the signed-out page. */
    continueUrl: text("continue_url"),
    /** The relying party's tenant (the signed-out page's branding). */
    tenantUuid: varchar("tenant_uuid", { length: 38 }),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("tessera_upstream_oidc_logout_expires_idx").on(t.expiresAt)],
);
