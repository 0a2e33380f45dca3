// OpenID Connect provider tables (Tessera's own, prefixed `tessera_oidc_`): the signing keys and
// the registered relying parties (clients).
import { boolean, index, integer, jsonb, pgTable, text, timestamp, varchar } from "drizzle-orm/pg-core";
import { tenants, users } from "./identity.ts";
import { sessions } from "./tokens.ts";

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
    idTokenSignedResponseAlg: varchar("id_token_signed_response_alg", { length: 16 }).notNull(),
    accessTokenLifetime: integer("access_token_lifetime"),
    idTokenLifetime: integer("id_token_lifetime"),
    refreshTokenLifetime: integer("refresh_token_lifetime"),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [index("tessera_oidc_client_tenant_uuid_idx").on(t.tenantUuid)],
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
  },
  (t) => [
    index("tessera_oidc_code_token_uuid_idx").on(t.tokenUuid),
    index("tessera_oidc_code_session_uuid_idx").on(t.sessionUuid),
  ],
);
