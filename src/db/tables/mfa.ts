// Multi-factor authentication (Tessera addition, issue 25): one TOTP factor per user, its
// single-use recovery codes, and the per-tenant MFA policy. The TOTP secret is stored encrypted
// (AES-256-GCM, services/auth/mfa-crypto.ts); recovery codes only as SHA-256 hashes.
import { bigint, boolean, check, index, pgTable, serial, text, timestamp, varchar } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { tenants, users } from "./identity.ts";

export const mfaTotp = pgTable("tessera_mfa_totp", {
  userUuid: varchar("user_uuid", { length: 38 })
    .primaryKey()
    .references(() => users.uuid, { onDelete: "cascade" }),
  /** `<key id>:<base64 iv‖tag‖ciphertext>`; the user uuid is the GCM additional data. */
  secretEncrypted: text("secret_encrypted").notNull(),
  /** Null while the enrolment waits for its confirming code: an unconfirmed factor is never asked for. */
  confirmedAt: timestamp("confirmed_at", { withTimezone: true, mode: "date" }),
  /** RFC 6238 time step of the last accepted code: a code of that step or earlier is refused (no replay). */
  lastUsedStep: bigint("last_used_step", { mode: "number" }),
  createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
});

export const mfaRecoveryCodes = pgTable(
  "tessera_mfa_recovery_code",
  {
    id: serial("id").primaryKey(),
    userUuid: varchar("user_uuid", { length: 38 })
      .notNull()
      .references(() => users.uuid, { onDelete: "cascade" }),
    /** hex SHA-256 of the normalised code (codes carry 50 random bits: no salt or slow hash needed). */
    codeHash: text("code_hash").notNull(),
    usedAt: timestamp("used_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [index("tessera_mfa_recovery_code_user_idx").on(t.userUuid)],
);

export const tenantMfaPolicy = pgTable(
  "tessera_tenant_mfa_policy",
  {
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .primaryKey()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    /** Null: inherited (as every column here). */
    mfa: text("mfa"),
    /** Passwordless passkey sign-in on the hosted login page allowed (user verification required). */
    passwordless: boolean("passwordless"),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [check("tessera_tenant_mfa_policy_mfa_check", sql`${t.mfa} in ('optional', 'required')`)],
);
