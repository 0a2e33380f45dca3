// OpenID Connect provider tables (Tessera's own, prefixed `tessera_oidc_`): the signing keys and
// the registered relying parties (clients).
import {
  boolean,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uniqueIndex,
  varchar,
} from "drizzle-orm/pg-core";
import { uuidPk } from "./columns.ts";
import { tenants, users } from "./identity.ts";
import { refreshTokens, sessions } from "./tokens.ts";

/**
 * Signing keys, shared by every instance. The private key is a JWK, AES-256-GCM encrypted when
 * `oidc.key_encryption_key` is configured (`encrypted` says which); it is never returned by any route.
 * `retired_at` is set when a newer key of the same algorithm takes over: the retired key stays
 * published in the JWKS until the tokens it signed have expired.
 */
export const oidcKeys = pgTable(
  "tessera_oidc_key",
  {
    kid: varchar("kid", { length: 64 }).primaryKey(),
    alg: varchar("alg", { length: 16 }).notNull(),
    publicJwk: jsonb("public_jwk").notNull(),
    privateKey: text("private_key").notNull(),
    encrypted: boolean("encrypted").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    retiredAt: timestamp("retired_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [index("tessera_oidc_key_alg_idx").on(t.alg, t.createdAt)],
);

/** A relying party registered in a tenant (OIDC Dynamic Client Registration 1.0 §2 names where they exist). */
export const oidcClients = pgTable(
  "tessera_oidc_client",
  {
    clientId: varchar("client_id", { length: 38 }).primaryKey(),
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    name: text("name").notNull(),
    clientType: varchar("client_type", { length: 16 }).notNull(),
    /** SHA-256 of the secret (a 256-bit random value, so a slow hash adds nothing); null for public clients. */
    secretHash: text("secret_hash"),
    redirectUris: jsonb("redirect_uris").$type<string[]>().notNull(),
    postLogoutRedirectUris: jsonb("post_logout_redirect_uris").$type<string[]>().notNull(),
    grantTypes: jsonb("grant_types").$type<string[]>().notNull(),
    scopes: jsonb("scopes").$type<string[]>().notNull(),
    firstParty: boolean("first_party").notNull().default(false),
    /** Plain http redirect URIs off loopback allowed at registration (development; RFC 6749 §3.1.2.1). */
    allowInsecureRedirects: boolean("allow_insecure_redirects").notNull().default(false),
    idTokenSignedResponseAlg: varchar("id_token_signed_response_alg", { length: 16 }).notNull(),
    accessTokenLifetime: integer("access_token_lifetime"),
    idTokenLifetime: integer("id_token_lifetime"),
    refreshTokenLifetime: integer("refresh_token_lifetime"),
    /** The ACL of the client's own tokens (client credentials grant, RFC 6749 §4.4). */
    acl: jsonb("acl").$type<string[]>().notNull().default([]),
    /** OpenID Connect Back-Channel Logout 1.0 §2.2: where logout tokens are posted (migration 0035). */
    backchannelLogoutUri: text("backchannel_logout_uri"),
    backchannelLogoutSessionRequired: boolean("backchannel_logout_session_required").notNull().default(false),
    /** OpenID Connect Front-Channel Logout 1.0 §2: the page framed on the signed-out page. */
    frontchannelLogoutUri: text("frontchannel_logout_uri"),
    frontchannelLogoutSessionRequired: boolean("frontchannel_logout_session_required").notNull().default(false),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    /** RFC 7592 §3: the SHA-256 of a self-registered client's registration access token (null: registered by an administrator). */
    registrationTokenHash: varchar("registration_token_hash", { length: 64 }),
    /** The initial access token a self-registered client was registered with (RFC 7591 §3). */
    registeredWith: varchar("registered_with", { length: 38 }),
    /** RFC 7591 §2 metadata kept and shown only (client_uri, logo_uri, contacts, tos_uri, policy_uri, software_id...). */
    registrationMetadata: jsonb("registration_metadata").$type<Record<string, unknown>>(),
    /** RFC 7591 §2 `jwks` / `jwks_uri`: the keys that sign the client's request objects (RFC 9101). */
    jwks: jsonb("jwks").$type<{ keys: Record<string, unknown>[] }>(),
    jwksUri: text("jwks_uri"),
    /** RFC 9126 §6: the authorization endpoint accepts only pushed requests from this client. */
    requirePushedAuthorizationRequests: boolean("require_pushed_authorization_requests").notNull().default(false),
    /** RFC 9449 §5.2: the token endpoint issues this client DPoP-bound access tokens only. */
    dpopBoundAccessTokens: boolean("dpop_bound_access_tokens").notNull().default(false),
  },
  (t) => [index("tessera_oidc_client_tenant_uuid_idx").on(t.tenantUuid)],
);

/**
 * An initial access token (RFC 7591 §3), stored as its SHA-256: issued by a tenant administrator, it
 * lets `max_uses` clients register themselves in its tenant, with at most its grant types.
 */
export const oidcInitialAccessTokens = pgTable(
  "tessera_oidc_initial_access_token",
  {
    uuid: varchar("uuid", { length: 38 }).primaryKey(),
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    tokenHash: varchar("token_hash", { length: 64 }).notNull().unique(),
    maxUses: integer("max_uses").notNull(),
    uses: integer("uses").notNull().default(0),
    grantTypes: jsonb("grant_types").$type<string[]>().notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [index("tessera_oidc_initial_access_token_tenant_idx").on(t.tenantUuid)],
);

/**
 * A pushed authorization request (RFC 9126 §2): the SHA-256 of its `request_uri`, bound to its
 * client; `opened` once a browser brought it to the authorization endpoint (its time then becomes
 * the sign-in's); deleted when the code is issued (single use, §4).
 */
export const oidcPushedRequests = pgTable(
  "tessera_oidc_pushed_request",
  {
    uriHash: varchar("uri_hash", { length: 64 }).primaryKey(),
    clientId: varchar("client_id", { length: 38 })
      .notNull()
      .references(() => oidcClients.clientId, { onDelete: "cascade" }),
    params: jsonb("params").$type<Record<string, string>>().notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    opened: boolean("opened").notNull().default(false),
  },
  (t) => [index("tessera_oidc_pushed_request_expires_idx").on(t.expiresAt)],
);

/**
 * An authorization code (RFC 6749 §4.1.2), stored as its SHA-256, and once exchanged the grant
 * behind the access token it gave: userinfo reads the granted scope here, and a replayed code
 * finds the session to revoke (RFC 6749 §4.1.2, §10.5). It goes with the session.
 */
export const oidcCodes = pgTable(
  "tessera_oidc_code",
  {
    codeHash: varchar("code_hash", { length: 64 }).primaryKey(),
    clientId: varchar("client_id", { length: 38 })
      .notNull()
      .references(() => oidcClients.clientId, { onDelete: "cascade" }),
    userUuid: varchar("user_uuid", { length: 38 })
      .notNull()
      .references(() => users.uuid, { onDelete: "cascade" }),
    /** The Tessera token issued by the login behind the code, returned by the exchange. */
    tokenUuid: varchar("token_uuid", { length: 38 }).notNull(),
    sessionUuid: varchar("session_uuid", { length: 38 })
      .notNull()
      .references(() => sessions.uuid, { onDelete: "cascade" }),
    redirectUri: text("redirect_uri").notNull(),
    scope: text("scope").notNull(),
    nonce: text("nonce"),
    codeChallenge: text("code_challenge"),
    authTime: integer("auth_time").notNull(),
    amr: jsonb("amr").$type<string[]>().notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true, mode: "date" }),
    /** The browser session the code was issued through: RP-initiated logout revokes its sessions. */
    browserSessionId: varchar("browser_session_id", { length: 38 }).references(() => oidcBrowserSessions.id, {
      onDelete: "set null",
    }),
    /** RFC 8707 §2.1: the resource the authorization request indicated; the token request must name it. */
    resource: text("resource"),
  },
  (t) => [
    index("tessera_oidc_code_token_uuid_idx").on(t.tokenUuid),
    index("tessera_oidc_code_session_uuid_idx").on(t.sessionUuid),
    index("tessera_oidc_code_browser_session_idx").on(t.browserSessionId),
  ],
);

/**
 * A browser signed in on the hosted login page (OIDC Core §3.1.2.3 single sign-on): the cookie's
 * SHA-256, never the cookie itself. `login` and `method` let a later authorization issue a token
 * without the password (as a refresh token does); `auth_time` and `amr` are those of the real
 * authentication. Deleted at logout and when the user's credentials change or it is disabled.
 */
export const oidcBrowserSessions = pgTable(
  "tessera_oidc_browser_session",
  {
    id: uuidPk(),
    cookieHash: varchar("cookie_hash", { length: 64 }).notNull().unique(),
    userUuid: varchar("user_uuid", { length: 38 })
      .notNull()
      .references(() => users.uuid, { onDelete: "cascade" }),
    login: text("login").notNull(),
    authTime: integer("auth_time").notNull(),
    amr: jsonb("amr").$type<string[]>().notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("tessera_oidc_browser_session_user_idx").on(t.userUuid)],
);

/**
 * The clients a browser session gave tokens to (written at the code exchange; OpenID Connect
 * Back-Channel Logout 1.0 §2.7, Front-Channel Logout 1.0 §3): told when the browser session ends,
 * even once the access tokens issued through it have expired. Goes with the session or the client.
 */
export const oidcBrowserSessionClients = pgTable(
  "tessera_oidc_browser_session_client",
  {
    browserSessionId: varchar("browser_session_id", { length: 38 }).notNull(),
    clientId: varchar("client_id", { length: 38 }).notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: "tessera_oidc_browser_session_client_pk", columns: [t.browserSessionId, t.clientId] }),
    foreignKey({
      name: "tessera_oidc_browser_session_client_session_fk",
      columns: [t.browserSessionId],
      foreignColumns: [oidcBrowserSessions.id],
    }).onDelete("cascade"),
    foreignKey({
      name: "tessera_oidc_browser_session_client_client_fk",
      columns: [t.clientId],
      foreignColumns: [oidcClients.clientId],
    }).onDelete("cascade"),
    index("tessera_oidc_browser_session_client_client_idx").on(t.clientId),
  ],
);

/** Scopes a user granted a third-party client on the consent screen (OIDC Core §3.1.2.4), remembered. */
export const oidcConsents = pgTable(
  "tessera_oidc_consent",
  {
    userUuid: varchar("user_uuid", { length: 38 })
      .notNull()
      .references(() => users.uuid, { onDelete: "cascade" }),
    clientId: varchar("client_id", { length: 38 })
      .notNull()
      .references(() => oidcClients.clientId, { onDelete: "cascade" }),
    scopes: jsonb("scopes").$type<string[]>().notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.userUuid, t.clientId] }), index("tessera_oidc_consent_client_idx").on(t.clientId)],
);

/**
 * Every access token the provider issued (whatever the grant): which client, user and scope it was
 * issued for — what userinfo, introspection and revocation read. It goes with the session.
 */
export const oidcAccessTokens = pgTable(
  "tessera_oidc_access_token",
  {
    tokenUuid: varchar("token_uuid", { length: 38 }).primaryKey(),
    sessionUuid: varchar("session_uuid", { length: 38 })
      .notNull()
      .references(() => sessions.uuid, { onDelete: "cascade" }),
    clientId: varchar("client_id", { length: 38 })
      .notNull()
      .references(() => oidcClients.clientId, { onDelete: "cascade" }),
    /** Null for a client's own token (client credentials). */
    userUuid: varchar("user_uuid", { length: 38 }),
    grantType: text("grant_type").notNull(),
    scope: text("scope").notNull(),
    /** The `jti` of the RFC 9068 JWT handed out for this token (a JWT is resolved by it), if any. */
    jti: varchar("jti", { length: 38 }),
    /** The resource (RFC 8707) the token was issued for, if one was named. */
    resource: text("resource"),
    /** The acting party of a token exchange (RFC 8693 §4.1 `act`), if any. */
    act: jsonb("act").$type<Record<string, unknown>>(),
    /** RFC 9449 §6: the thumbprint (RFC 7638) of the key the token is bound to (`cnf.jkt`), if bound. */
    jkt: varchar("jkt", { length: 43 }),
  },
  (t) => [
    index("tessera_oidc_access_token_session_uuid_idx").on(t.sessionUuid),
    uniqueIndex("tessera_oidc_access_token_jti_idx").on(t.jti),
  ],
);

/**
 * A resource server registered in a tenant (RFC 8707 §2 resource indicators): the ACL entries the
 * tokens issued for it may carry, and their format (RFC 9068 JWT, or Tessera's opaque token).
 */
export const oidcResources = pgTable(
  "tessera_oidc_resource",
  {
    uuid: uuidPk(),
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    identifier: text("identifier").notNull(),
    acl: jsonb("acl").$type<string[]>().notNull().default([]),
    tokenFormat: varchar("token_format", { length: 16 }).notNull(),
    accessTokenLifetime: integer("access_token_lifetime"),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [unique("tessera_oidc_resource_tenant_identifier").on(t.tenantUuid, t.identifier)],
);

/**
 * An OpenID Connect refresh token (OIDC Core §11, RFC 6749 §6), stored as its SHA-256. Its family is
 * a Tessera refresh token (`auth_refresh_token`, one per user and client): listed and deleted by the
 * refresh-token routes, and every session issued from it goes with it. A rotated token keeps its row
 * with `rotated_at` set, so that presenting it again is recognised as reuse (RFC 9700 §4.14.2).
 */
export const oidcRefreshTokens = pgTable(
  "tessera_oidc_refresh_token",
  {
    tokenHash: varchar("token_hash", { length: 64 }).primaryKey(),
    familyUuid: varchar("family_uuid", { length: 38 })
      .notNull()
      .references(() => refreshTokens.uuid, { onDelete: "cascade" }),
    clientId: varchar("client_id", { length: 38 })
      .notNull()
      .references(() => oidcClients.clientId, { onDelete: "cascade" }),
    userUuid: varchar("user_uuid", { length: 38 })
      .notNull()
      .references(() => users.uuid, { onDelete: "cascade" }),
    scope: text("scope").notNull(),
    authTime: integer("auth_time").notNull(),
    amr: jsonb("amr").$type<string[]>().notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }),
    rotatedAt: timestamp("rotated_at", { withTimezone: true, mode: "date" }),
    /** Once rotated: the salt its successor was derived with from it (services/oidc/grants.ts, the grace period). */
    successorSalt: varchar("successor_salt", { length: 43 }),
    /** Once rotated: the access token issued with the successor. */
    successorTokenUuid: varchar("successor_token_uuid", { length: 38 }),
    /** RFC 9449 §5: a public client's refresh token bound to its DPoP key (thumbprint), if bound. */
    jkt: varchar("jkt", { length: 43 }),
    /**
     * The session of the sign-in the token descends from: a refresh continues it (its end ends the
     * token). Null for tokens issued before 0042: their first refresh links them.
     */
    sessionUuid: varchar("session_uuid", { length: 38 }).references(() => sessions.uuid, { onDelete: "cascade" }),
    /** The sign-in's `sid` (its browser session's public id), kept for the refreshed ID tokens. */
    sid: varchar("sid", { length: 38 }),
  },
  (t) => [
    index("tessera_oidc_refresh_token_family_uuid_idx").on(t.familyUuid),
    index("tessera_oidc_refresh_token_session_uuid_idx").on(t.sessionUuid),
  ],
);

/**
 * A device authorization request (RFC 8628 §3.2): the device code (stored as its SHA-256) that the
 * device polls with, and the user code a person types on the verification page. Once approved, it
 * holds the token the sign-in issued until the device collects it (once).
 */
export const oidcDeviceCodes = pgTable(
  "tessera_oidc_device_code",
  {
    deviceCodeHash: varchar("device_code_hash", { length: 64 }).primaryKey(),
    userCode: varchar("user_code", { length: 16 }).notNull().unique("tessera_oidc_device_code_user_code_key"),
    clientId: varchar("client_id", { length: 38 })
      .notNull()
      .references(() => oidcClients.clientId, { onDelete: "cascade" }),
    scope: text("scope").notNull(),
    /** pending, approved, denied or collected. */
    status: varchar("status", { length: 16 }).notNull().default("pending"),
    interval: integer("interval").notNull(),
    lastPolledAt: timestamp("last_polled_at", { withTimezone: true, mode: "date" }),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    userUuid: varchar("user_uuid", { length: 38 }).references(() => users.uuid, { onDelete: "cascade" }),
    tokenUuid: varchar("token_uuid", { length: 38 }),
    sessionUuid: varchar("session_uuid", { length: 38 }).references(() => sessions.uuid, { onDelete: "cascade" }),
    authTime: integer("auth_time"),
    amr: jsonb("amr").$type<string[]>(),
  },
  (t) => [index("tessera_oidc_device_code_expires_at_idx").on(t.expiresAt)],
);

/**
 * A DPoP proof already accepted (RFC 9449 §11.1), by the SHA-256 of its key thumbprint and `jti`,
 * until its `iat` leaves the accepted window: a replay is refused on every instance.
 */
export const oidcDpopProofs = pgTable(
  "tessera_oidc_dpop_proof",
  {
    proofHash: varchar("proof_hash", { length: 64 }).primaryKey(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("tessera_oidc_dpop_proof_expires_at_idx").on(t.expiresAt)],
);
