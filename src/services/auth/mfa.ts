// A user's second factors (issue 25): TOTP enrolment, confirmation with recovery codes, removal,
// status, and the code check shared by logins and the routes. Secrets are encrypted at rest
// (mfa-crypto.ts); a TOTP code is accepted once (RFC 6238 §5.2), a recovery code once.
import { and, eq, isNull, sql } from "drizzle-orm";
import { type AuditActor, recordAudit, secretChange } from "../audit/record.ts";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { mfaRecoveryCodes, mfaTotp, users } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { Conflict, NotFound, invalidField } from "../../domain/errors.ts";
import { recordMfa } from "../../observe/metrics.ts";
import { publishEvent, routingKey } from "../events.ts";
import { requireVisibleUser, type UserRow } from "../identity/visibility.ts";
import { decryptSecret, encryptSecret, keyRing } from "./mfa-crypto.ts";
import { newRecoveryCodes, recoveryCodeHash } from "./recovery-codes.ts";
import { isTotpCode, matchingStep, newTotpSecret, totpEnrolment } from "./totp.ts";

export const MFA_METHODS = ["totp", "recovery_code"];
export const PASSKEY_METHOD = "passkey";

export interface MfaStatus {
  totp: { enrolled: boolean; confirmed: boolean; created_at: string | null; confirmed_at: string | null };
  recovery_codes_left: number;
  /** How many passkeys the user has registered (webauthn.ts). */
  passkeys: number;
  methods: string[];
}

const passkeyCount = sql<number>`(select count(*)::int from tessera_passkey p where p.user_uuid = auth_user.uuid)`;

/** The second factors a user can give: TOTP and recovery codes once confirmed, `passkey` with one registered. */
export async function factorMethods(app: AppContext, userUuid: string): Promise<string[]> {
  const [row] = await app.db
    .select({ totp: mfaTotp.confirmedAt, passkeys: passkeyCount })
    .from(users)
    .leftJoin(mfaTotp, eq(mfaTotp.userUuid, users.uuid))
    .where(eq(users.uuid, userUuid));
  return [...(row?.totp ? MFA_METHODS : []), ...(row?.passkeys ? [PASSKEY_METHOD] : [])];
}

/** The user the route names: the caller itself (`me`), or a user of the caller's tenant or below (else 404). */
export async function mfaSubject(
  app: AppContext,
  caller: Caller,
  userUuid: string | "me",
  db: DbOrTx = app.db,
): Promise<UserRow> {
  if (userUuid === "me") {
    const [own] = caller.userUuid ? await db.select().from(users).where(eq(users.uuid, caller.userUuid)) : [];
    if (!own) throw new NotFound("users", undefined, "This token has no user");
    return own;
  }
  return requireVisibleUser(app, caller, userUuid, db);
}

/** The enabled user a session token stands for (the account page), or null. */
export async function accountUser(app: AppContext, userUuid: string): Promise<UserRow | null> {
  const [user] = await app.db.select().from(users).where(eq(users.uuid, userUuid));
  return user?.enabled ? user : null;
}

export async function mfaStatus(app: AppContext, user: UserRow): Promise<MfaStatus> {
  const [totp] = await app.db
    .select({ createdAt: mfaTotp.createdAt, confirmedAt: mfaTotp.confirmedAt })
    .from(mfaTotp)
    .where(eq(mfaTotp.userUuid, user.uuid));
  const [left] = await app.db
    .select({ n: sql<number>`count(*)::int` })
    .from(mfaRecoveryCodes)
    .where(and(eq(mfaRecoveryCodes.userUuid, user.uuid), isNull(mfaRecoveryCodes.usedAt)));
  const confirmed = Boolean(totp?.confirmedAt);
  const [keys] = await app.db.select({ n: passkeyCount }).from(users).where(eq(users.uuid, user.uuid));
  const passkeyTotal = keys?.n ?? 0;
  return {
    totp: {
      enrolled: Boolean(totp),
      confirmed,
      created_at: totp?.createdAt.toISOString() ?? null,
      confirmed_at: totp?.confirmedAt?.toISOString() ?? null,
    },
    recovery_codes_left: confirmed ? (left?.n ?? 0) : 0,
    passkeys: passkeyTotal,
    methods: [...(confirmed ? MFA_METHODS : []), ...(passkeyTotal ? [PASSKEY_METHOD] : [])],
  };
}

/** A confirmed TOTP factor (the factor a code proves; passkeys are proven by their own ceremony). */
export async function hasConfirmedFactor(app: AppContext, userUuid: string): Promise<boolean> {
  const [row] = await app.db
    .select({ confirmedAt: mfaTotp.confirmedAt })
    .from(mfaTotp)
    .where(eq(mfaTotp.userUuid, userUuid));
  return Boolean(row?.confirmedAt);
}

/** Starts (or restarts) a TOTP enrolment: 409 while a confirmed factor exists (remove it first). */
export async function startTotpEnrolment(
  app: AppContext,
  user: UserRow,
): Promise<{ secret: string; otpauth_uri: string; qr_code: string }> {
  const ring = keyRing(app);
  const secret = newTotpSecret();
  const encrypted = encryptSecret(ring, secret, user.uuid);
  const stored = await app.db
    .insert(mfaTotp)
    .values({ userUuid: user.uuid, secretEncrypted: encrypted })
    .onConflictDoUpdate({
      target: mfaTotp.userUuid,
      set: { secretEncrypted: encrypted, createdAt: sql`now()`, lastUsedStep: null },
      setWhere: isNull(mfaTotp.confirmedAt),
    })
    .returning({ userUuid: mfaTotp.userUuid });
  if (stored.length === 0)
    throw new Conflict(
      "mfa",
      {
        totp: {
          constraint_id: "unique",
          constraint: "one TOTP factor",
          message: "A TOTP factor is already confirmed; remove it first",
        },
      },
      "A TOTP factor is already confirmed",
    );
  const { otpauthUri, qrCode } = await totpEnrolment(secret, user.username ?? user.uuid, app.config.mfa.issuer);
  return { secret, otpauth_uri: otpauthUri, qr_code: qrCode };
}

/** The enrolment waiting for its confirming code, shown again (a reloaded page keeps its QR code); null when none. */
export async function pendingTotpEnrolment(
  app: AppContext,
  user: UserRow,
): Promise<{ secret: string; otpauth_uri: string; qr_code: string } | null> {
  const [row] = await app.db.select().from(mfaTotp).where(eq(mfaTotp.userUuid, user.uuid));
  if (!row || row.confirmedAt) return null;
  const { secret } = decryptSecret(keyRing(app), row.secretEncrypted, user.uuid);
  const { otpauthUri, qrCode } = await totpEnrolment(secret, user.username ?? user.uuid, app.config.mfa.issuer);
  return { secret, otpauth_uri: otpauthUri, qr_code: qrCode };
}

export const wrongCode = () =>
  invalidField("mfa", "code", "mfa_code", "a current, unused code", "Wrong, expired or already used code");

/** Confirms a pending enrolment with a current code: 200 with ten recovery codes, shown this once. */
export async function confirmTotp(
  app: AppContext,
  user: UserRow,
  code: string,
  actor: AuditActor | Caller | null = null,
): Promise<{ recovery_codes: string[] }> {
  const ring = keyRing(app);
  return inTransaction(app, async (tx) => {
    const [row] = await tx.select().from(mfaTotp).where(eq(mfaTotp.userUuid, user.uuid)).for("update");
    if (!row) throw new NotFound("mfa", user.uuid, "No TOTP enrolment in progress for this user");
    if (row.confirmedAt)
      throw new Conflict(
        "mfa",
        {
          totp: {
            constraint_id: "confirmed",
            constraint: "pending enrolment",
            message: "The TOTP factor is already confirmed",
          },
        },
        "Already confirmed",
      );
    const step = matchingStep(decryptSecret(ring, row.secretEncrypted, user.uuid).secret, code);
    if (step === null) throw wrongCode();
    await tx
      .update(mfaTotp)
      .set({ confirmedAt: sql`now()`, lastUsedStep: step })
      .where(eq(mfaTotp.userUuid, user.uuid));
    const codes = newRecoveryCodes();
    await tx.delete(mfaRecoveryCodes).where(eq(mfaRecoveryCodes.userUuid, user.uuid));
    await tx
      .insert(mfaRecoveryCodes)
      .values(codes.map((c) => ({ userUuid: user.uuid, codeHash: recoveryCodeHash(c)! })));
    await publishMfaEvent(app, tx, "enrolled", user);
    await recordAudit(app, tx, actor, mfaAudit("mfa.totp.enrol", user));
    recordMfa("enrolled");
    return { recovery_codes: codes };
  });
}

/** Removes the TOTP factor and its recovery codes. Absent: nothing to do (D4 of docs/wazo-auth-differences.md). */
export async function removeTotp(
  app: AppContext,
  user: UserRow,
  actor: AuditActor | Caller | null = null,
): Promise<void> {
  await inTransaction(app, async (tx) => {
    const gone = await tx
      .delete(mfaTotp)
      .where(eq(mfaTotp.userUuid, user.uuid))
      .returning({ confirmedAt: mfaTotp.confirmedAt });
    await tx.delete(mfaRecoveryCodes).where(eq(mfaRecoveryCodes.userUuid, user.uuid));
    if (gone[0]?.confirmedAt) {
      await publishMfaEvent(app, tx, "removed", user);
      await recordAudit(app, tx, actor, mfaAudit("mfa.totp.reset", user));
      recordMfa("removed");
    }
  });
}

/**
 * True when `code` is a current, unused TOTP code of the user's confirmed factor (its step is then
 * recorded, in one conditional update: two requests racing with one code cannot both pass), or an
 * unused recovery code (then spent).
 */
export async function useSecondFactor(
  app: AppContext,
  userUuid: string,
  code: string,
): Promise<"totp" | "recovery_code" | null> {
  if (isTotpCode(code)) {
    const [row] = await app.db.select().from(mfaTotp).where(eq(mfaTotp.userUuid, userUuid));
    if (!row?.confirmedAt) return null;
    const ring = keyRing(app);
    const { secret, stale } = decryptSecret(ring, row.secretEncrypted, userUuid);
    const step = matchingStep(secret, code);
    if (step === null) return null;
    const reencrypted = stale ? { secretEncrypted: encryptSecret(ring, secret, userUuid) } : {};
    const accepted = await app.db
      .update(mfaTotp)
      .set({ lastUsedStep: step, ...reencrypted })
      .where(
        and(
          eq(mfaTotp.userUuid, userUuid),
          sql`(${mfaTotp.lastUsedStep} is null or ${mfaTotp.lastUsedStep} < ${step})`,
        ),
      )
      .returning({ userUuid: mfaTotp.userUuid });
    return accepted.length ? "totp" : null;
  }
  const hash = recoveryCodeHash(code);
  if (!hash) return null;
  const spent = await app.db
    .update(mfaRecoveryCodes)
    .set({ usedAt: sql`now()` })
    .where(
      and(
        eq(mfaRecoveryCodes.userUuid, userUuid),
        eq(mfaRecoveryCodes.codeHash, hash),
        isNull(mfaRecoveryCodes.usedAt),
      ),
    )
    .returning({ id: mfaRecoveryCodes.id });
  if (!spent.length) return null;
  recordMfa("recovery_code_used");
  return "recovery_code";
}

export async function publishMfaEvent(
  app: AppContext,
  tx: DbOrTx,
  kind: "enrolled" | "removed" | "failed",
  user: { uuid: string; tenantUuid: string },
  method: "totp" | "passkey" = "totp",
): Promise<void> {
  await publishEvent(app, tx, {
    name: `auth_user_mfa_${kind}`,
    routingKey: routingKey(`auth.users.{user_uuid}.mfa.${kind}`, { user_uuid: user.uuid }),
    data: { user_uuid: user.uuid, tenant_uuid: user.tenantUuid, method },
    tenantUuid: user.tenantUuid,
    userUuid: user.uuid,
    aggregate: `user:${user.uuid}`,
  });
}

/** The audit entry of a factor enrolled or removed: the secret and the recovery codes by name only. */
const mfaAudit = (action: string, user: UserRow) => ({
  action,
  target: { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid },
  changes: [secretChange("totp_secret"), secretChange("recovery_codes")],
});
