// Passkeys (WebAuthn Level 3, issue 25) through @simplewebauthn/server: a user's credentials
// (several, named), and the two ceremonies. A challenge is stored server-side under a random
// handle, taken (deleted) by the one verification that uses it, and expires after five minutes
// (WebAuthn §13.4.3: a challenge is used once). The relying party is `public_url`'s host (WebAuthn
// §5.1.2 RP ID) and origin, else the request's own.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import type * as SimpleWebAuthn from "@simplewebauthn/server";
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server";
import { and, asc, eq, gt, lt, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { passkeys, users, webauthnChallenges } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { invalidField, NotFound } from "../../domain/errors.ts";
import { recordMfa } from "../../observe/metrics.ts";
import type { UserRow } from "../identity/visibility.ts";
import { publishMfaEvent } from "./mfa.ts";
import type { Caller } from "../../domain/caller.ts";
import { type AuditActor, changesOf, recordAudit } from "../audit/record.ts";

/** Who registered, renamed or removed a passkey: the caller of a route, or the user on a hosted page. */
type Actor = AuditActor | Caller | null;

/** The audit entry of a passkey change: its name and uuid; the credential and public key never. */
const passkeyAudit = (
  action: string,
  user: UserRow,
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
) => ({
  action,
  target: { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid },
  changes: changesOf(before, after),
});

/** WebAuthn §5.4.1 `timeout` (the recommended default), and how long the challenge is kept. */
const CEREMONY_MS = 300_000;

let library: Promise<typeof SimpleWebAuthn> | null = null;

/**
 * @simplewebauthn/server, loaded at the first ceremony: with its ASN.1 and X.509 dependencies it is
 * a sixth of the service's JavaScript, which a service whose users have no passkey never needs
 * (issue 28: idle memory, start time). Its polyfill first (tests/ops/binary.test.ts).
 */
function webauthnLibrary(): Promise<typeof SimpleWebAuthn> {
  library ??= import("./reflect-polyfill.ts").then(() => import("@simplewebauthn/server"));
  return library;
}

export interface RelyingParty {
  /** WebAuthn §5.1.2 RP ID: a registrable domain of the origin (its host). */
  id: string;
  origin: string;
  name: string;
}

/** `public_url` when set (the address users' browsers see), else the origin the request came to. */
export function relyingParty(app: AppContext, requestOrigin: string): RelyingParty {
  const origin = new URL(app.config.public_url ?? requestOrigin).origin;
  return { id: new URL(origin).hostname, origin, name: app.config.mfa.issuer };
}

type Purpose = "registration" | "authentication";

const handleHash = (handle: string) => createHash("sha256").update(handle).digest("hex");

async function storeChallenge(
  app: AppContext,
  purpose: Purpose,
  userUuid: string | null,
  challenge: string,
): Promise<string> {
  const handle = randomBytes(32).toString("base64url");
  await app.db.insert(webauthnChallenges).values({
    handleHash: handleHash(handle),
    challenge,
    purpose,
    userUuid,
    expiresAt: new Date(Date.now() + CEREMONY_MS),
  });
  return handle;
}

/** Expired challenges (the cleanup job, jobs.ts): never usable again, as `takeChallenge` checks the time. */
export async function purgeExpiredChallenges(app: AppContext): Promise<number> {
  const gone = await app.db
    .delete(webauthnChallenges)
    .where(lt(webauthnChallenges.expiresAt, new Date()))
    .returning({ handle: webauthnChallenges.handleHash });
  return gone.length;
}

const unusable = (field: string) =>
  invalidField("passkeys", field, "webauthn", "a current ceremony", "Unknown, expired or already used challenge");

/** The challenge, deleted as it is read: a second verification with the same handle finds nothing. */
async function takeChallenge(app: AppContext, handle: string, purpose: Purpose, userUuid: string | null) {
  const [row] = await app.db
    .delete(webauthnChallenges)
    .where(and(eq(webauthnChallenges.handleHash, handleHash(handle)), gt(webauthnChallenges.expiresAt, new Date())))
    .returning();
  if (!row || row.purpose !== purpose || row.userUuid !== userUuid) throw unusable("challenge_id");
  return row.challenge;
}

export type PasskeyRow = typeof passkeys.$inferSelect;

export function passkeyJson(p: PasskeyRow) {
  return {
    uuid: p.uuid,
    name: p.name,
    created_at: p.createdAt.toISOString(),
    last_used_at: p.lastUsedAt?.toISOString() ?? null,
    backup_eligible: p.backupEligible,
    backed_up: p.backedUp,
    transports: p.transports,
    aaguid: p.aaguid,
  };
}

export async function listPasskeys(app: AppContext, user: UserRow): Promise<PasskeyRow[]> {
  return app.db.select().from(passkeys).where(eq(passkeys.userUuid, user.uuid)).orderBy(asc(passkeys.createdAt));
}

/** The WebAuthn user handle of a user (§5.4.3 `user.id`): their uuid's UTF-8 bytes. */
const userHandleOf = (uuid: string) => new TextEncoder().encode(uuid);

export async function startPasskeyRegistration(app: AppContext, user: UserRow, rp: RelyingParty) {
  const existing = await listPasskeys(app, user);
  const { generateRegistrationOptions } = await webauthnLibrary();
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: user.username ?? user.uuid,
    userID: userHandleOf(user.uuid),
    timeout: CEREMONY_MS,
    attestationType: "none",
    // WebAuthn §5.4.3: the same authenticator is not registered twice.
    excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports })),
    // A discoverable credential (WebAuthn §6.2.2) is what passwordless sign-in needs.
    authenticatorSelection: { residentKey: "required", userVerification: "preferred" },
  });
  return { challenge_id: await storeChallenge(app, "registration", user.uuid, options.challenge), options };
}

export async function finishPasskeyRegistration(
  app: AppContext,
  user: UserRow,
  rp: RelyingParty,
  input: { challenge_id: string; name: string; credential: unknown },
  actor: Actor = null,
): Promise<PasskeyRow> {
  const challenge = await takeChallenge(app, input.challenge_id, "registration", user.uuid);
  const { verifyRegistrationResponse } = await webauthnLibrary();
  let verified: Awaited<ReturnType<typeof SimpleWebAuthn.verifyRegistrationResponse>>;
  try {
    verified = await verifyRegistrationResponse({
      response: input.credential as RegistrationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: false,
    });
  } catch (e) {
    throw invalidField("passkeys", "credential", "webauthn", "a registration response", (e as Error).message);
  }
  if (!verified.verified) throw unusable("credential");
  const info = verified.registrationInfo;
  return inTransaction(app, async (tx) => {
    const [row] = await tx
      .insert(passkeys)
      .values({
        credentialId: info.credential.id,
        uuid: randomUUID(),
        userUuid: user.uuid,
        name: input.name,
        publicKey: Buffer.from(info.credential.publicKey).toString("base64url"),
        counter: info.credential.counter,
        transports: info.credential.transports ?? [],
        backupEligible: info.credentialDeviceType === "multiDevice",
        backedUp: info.credentialBackedUp,
        aaguid: info.aaguid,
      })
      .onConflictDoNothing()
      .returning();
    if (!row)
      throw invalidField("passkeys", "credential", "unique", "a new credential", "This passkey is already registered");
    await publishMfaEvent(app, tx, "enrolled", user, "passkey");
    await recordAudit(
      app,
      tx,
      actor,
      passkeyAudit("mfa.passkey.register", user, null, { uuid: row.uuid, name: row.name }),
    );
    recordMfa("enrolled");
    return row;
  });
}

async function ownPasskey(app: AppContext, user: UserRow, uuid: string): Promise<PasskeyRow> {
  const [row] = await app.db
    .select()
    .from(passkeys)
    .where(and(eq(passkeys.uuid, uuid), eq(passkeys.userUuid, user.uuid)));
  if (!row) throw new NotFound("passkeys", uuid);
  return row;
}

export async function renamePasskey(
  app: AppContext,
  user: UserRow,
  uuid: string,
  name: string,
  actor: Actor = null,
): Promise<PasskeyRow> {
  const before = await ownPasskey(app, user, uuid);
  return inTransaction(app, async (tx) => {
    const [row] = await tx
      .update(passkeys)
      .set({ name })
      .where(and(eq(passkeys.uuid, uuid), eq(passkeys.userUuid, user.uuid)))
      .returning();
    if (!row) throw new NotFound("passkeys", uuid);
    await recordAudit(
      app,
      tx,
      actor,
      passkeyAudit("mfa.passkey.rename", user, { uuid, name: before.name }, { uuid, name }),
    );
    return row;
  });
}

/** Removes one passkey (absent: nothing to do, D4 of docs/wazo-auth-differences.md), or every one of the user's (`uuid` null: the administrator reset). */
export async function removePasskeys(
  app: AppContext,
  user: UserRow,
  uuid: string | null,
  actor: Actor = null,
): Promise<void> {
  await inTransaction(app, async (tx) => {
    const gone = await tx
      .delete(passkeys)
      .where(and(eq(passkeys.userUuid, user.uuid), uuid === null ? undefined : eq(passkeys.uuid, uuid)))
      .returning({ uuid: passkeys.uuid, name: passkeys.name });
    if (gone.length) {
      await publishMfaEvent(app, tx, "removed", user, "passkey");
      // One entry per passkey removed (`mfa.passkey.reset`: an administrator's removal of them all).
      const action = uuid === null ? "mfa.passkey.reset" : "mfa.passkey.remove";
      await recordAudit(
        app,
        tx,
        actor,
        ...gone.map((p) => passkeyAudit(action, user, { uuid: p.uuid, name: p.name }, null)),
      );
      recordMfa("removed");
    }
  });
}

/**
 * Options of an authentication ceremony: for a known user (the second factor after a password),
 * that user's credentials with user verification preferred; without one (passwordless), any
 * discoverable credential, user verification required.
 */
export async function startPasskeyAuthentication(app: AppContext, rp: RelyingParty, userUuid: string | null) {
  const allow = userUuid
    ? (await app.db.select().from(passkeys).where(eq(passkeys.userUuid, userUuid))).map((p) => ({
        id: p.credentialId,
        transports: p.transports,
      }))
    : undefined;
  const { generateAuthenticationOptions } = await webauthnLibrary();
  const options = await generateAuthenticationOptions({
    rpID: rp.id,
    timeout: CEREMONY_MS,
    allowCredentials: allow,
    userVerification: userUuid ? "preferred" : "required",
  });
  return { challenge_id: await storeChallenge(app, "authentication", userUuid, options.challenge), options };
}

export interface PasskeyAssertion {
  userUuid: string;
  /** RFC 8176 §2: `swk` for a synced (backup-eligible) credential, `hwk` for a device-bound one. */
  amr: "hwk" | "swk";
  userVerified: boolean;
}

/**
 * Verifies an assertion against its stored challenge (taken: used once) and the credential's key;
 * `userUuid` set, the credential must be that user's; null (passwordless), the authenticator must
 * have verified the user and returned a user handle; a user handle must name the credential's owner
 * (WebAuthn §7.2 step 6) (WebAuthn §6.2.3 UV: a PIN or a biometric, the second factor). The
 * signature counter is checked by the library (a regression is refused) and stored.
 */
export async function verifyPasskeyAssertion(
  app: AppContext,
  rp: RelyingParty,
  challengeId: string,
  response: unknown,
  userUuid: string | null,
): Promise<PasskeyAssertion | null> {
  const challenge = await takeChallenge(app, challengeId, "authentication", userUuid);
  const assertion = response as AuthenticationResponseJSON;
  if (typeof assertion?.id !== "string") return null;
  const [key] = await app.db
    .select({ passkey: passkeys, enabled: users.enabled })
    .from(passkeys)
    .innerJoin(users, eq(users.uuid, passkeys.userUuid))
    .where(eq(passkeys.credentialId, assertion.id));
  if (!key?.enabled || (userUuid !== null && key.passkey.userUuid !== userUuid)) return refused();
  if (!handleFits(assertion.response?.userHandle, key.passkey.userUuid, userUuid === null)) return refused();
  const { verifyAuthenticationResponse } = await webauthnLibrary();
  try {
    const result = await verifyAuthenticationResponse({
      response: assertion,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: {
        id: key.passkey.credentialId,
        publicKey: Buffer.from(key.passkey.publicKey, "base64url"),
        counter: key.passkey.counter,
        transports: key.passkey.transports as never,
      },
      requireUserVerification: userUuid === null,
    });
    if (!result.verified) return refused();
    await app.db
      .update(passkeys)
      .set({
        counter: result.authenticationInfo.newCounter,
        backedUp: result.authenticationInfo.credentialBackedUp,
        lastUsedAt: sql`now()`,
      })
      .where(eq(passkeys.credentialId, key.passkey.credentialId));
    recordMfa("passkey_accepted");
    return {
      userUuid: key.passkey.userUuid,
      amr: key.passkey.backupEligible ? "swk" : "hwk",
      userVerified: result.authenticationInfo.userVerified,
    };
  } catch {
    return refused();
  }
}

/**
 * WebAuthn §7.2 step 6: a user handle, when present, must name the credential's owner (the handle
 * registration gave: the user's uuid, UTF-8); passwordless (no user identified before the ceremony),
 * it must be present — a discoverable credential always returns it. The owner is not taken from it.
 */
function handleFits(handle: unknown, ownerUuid: string, required: boolean): boolean {
  if (handle === undefined || handle === null) return !required;
  return typeof handle === "string" && Buffer.from(handle, "base64url").equals(userHandleOf(ownerUuid));
}

function refused(): null {
  recordMfa("passkey_refused");
  return null;
}
