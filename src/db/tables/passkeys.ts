// Passkeys (WebAuthn Level 3, issue 25): a user's credentials, and the ceremonies' challenges
// (stored server-side, single use, short-lived), and the hosted login page's pending sign-ins
// (a password accepted, the second factor still to give).
import { bigint, boolean, index, integer, jsonb, pgTable, text, timestamp, varchar } from "drizzle-orm/pg-core";
import { users } from "./identity.ts";

export const passkeys = pgTable(
  "tessera_passkey",
  {
    /** WebAuthn §6.1 credential ID, base64url. */
    credentialId: text("credential_id").primaryKey(),
    /** Tessera's own id of the credential, in the routes. */
    uuid: varchar("uuid", { length: 38 }).notNull().unique(),
    userUuid: varchar("user_uuid", { length: 38 })
      .notNull()
      .references(() => users.uuid, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** COSE public key (RFC 9052), base64url: public, needs no encryption. */
    publicKey: text("public_key").notNull(),
    /** WebAuthn §6.1.1 signature counter: a counter that goes backwards marks a cloned authenticator. */
    counter: bigint("counter", { mode: "number" }).notNull().default(0),
    transports: jsonb("transports").$type<string[]>().notNull().default([]),
    /** WebAuthn §6.1 flags BE and BS: a synced ("multi-device") credential. */
    backupEligible: boolean("backup_eligible").notNull(),
    backedUp: boolean("backed_up").notNull(),
    aaguid: varchar("aaguid", { length: 36 }),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [index("tessera_passkey_user_idx").on(t.userUuid)],
);

export const webauthnChallenges = pgTable("tessera_webauthn_challenge", {
  /** SHA-256 of the challenge handle the client holds. */
  handleHash: varchar("handle_hash", { length: 64 }).primaryKey(),
  challenge: text("challenge").notNull(),
  purpose: text("purpose").notNull(),
  /** Registration: the user registering; second factor: the user signing in; passwordless: null. */
  userUuid: varchar("user_uuid", { length: 38 }).references(() => users.uuid, { onDelete: "cascade" }),
  expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
});

export const pendingSignIns = pgTable("tessera_mfa_pending_sign_in", {
  handleHash: varchar("handle_hash", { length: 64 }).primaryKey(),
  /** SHA-256 of the CSRF cookie of the browser that gave the password: the handle alone is useless. */
  browserHash: varchar("browser_hash", { length: 64 }).notNull(),
  userUuid: varchar("user_uuid", { length: 38 })
    .notNull()
    .references(() => users.uuid, { onDelete: "cascade" }),
  /** What the login pipeline resolved: the login, the identity provider's method, the backend. */
  login: text("login").notNull(),
  method: text("method").notNull(),
  backendName: text("backend_name").notNull(),
  /** `verify` (a factor to give) or `enrol` (the tenant requires one, none exists yet). */
  stage: text("stage").notNull(),
  /** The OpenID Connect client the sign-in is for (null: the account page's own sign-in). */
  clientId: varchar("client_id", { length: 38 }),
  amr: jsonb("amr").$type<string[]>().notNull(),
  attempts: integer("attempts").notNull().default(0),
  expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
});
