// Removing a user's second factors (TOTP, passkeys). By the user itself it needs a fresh proof of a
// factor, whichever route named the user: `me` or its own uuid (an ACL's `me` also matches the
// caller's uuid, so the path's spelling says nothing about who acts). A token alone — issued before
// the enrolment, stolen, or an OIDC access token held by a third-party application — must not
// strip the factors that guard the next login. Only an administrator acting on another user removes
// without one: the reset of a user who lost its device. An administrator acting on its own user
// (by uuid) is that user, and proves a factor like anyone else.
import type { AppContext } from "../../boot/context.ts";
import type { Caller } from "../../domain/caller.ts";
import type { UserRow } from "../identity/visibility.ts";
import { removeTotp } from "./mfa.ts";
import { type FactorProof, requireFactorProof, requireOwnCode } from "./mfa-login.ts";
import { type RelyingParty, removePasskeys } from "./webauthn.ts";

/** Where the request came from, for the login throttling a wrong proof counts against. */
export interface ProofOrigin {
  address: string;
  forwarded: boolean;
}

/** True when the caller is the user itself: its token's user is the target, however the path named it. */
export const actsOnItself = (caller: Caller, user: { uuid: string }): boolean =>
  caller.userUuid !== null && caller.userUuid === user.uuid;

/** Removes the user's TOTP factor and recovery codes; the user itself proves it with a current or recovery code. */
export async function removeTotpFactor(
  app: AppContext,
  caller: Caller,
  user: UserRow,
  code: string | undefined,
  origin: ProofOrigin,
): Promise<void> {
  if (actsOnItself(caller, user)) await requireOwnCode(app, user, code, origin);
  await removeTotp(app, user, caller);
}

/**
 * Removes one passkey (or every one, `passkeyUuid` null); the user itself proves a factor first
 * (a code, or a fresh assertion of one of its passkeys).
 */
export async function removePasskeyFactors(
  app: AppContext,
  caller: Caller,
  user: UserRow,
  passkeyUuid: string | null,
  proof: { rp: RelyingParty; origin: ProofOrigin; given: FactorProof },
): Promise<void> {
  if (actsOnItself(caller, user)) await requireFactorProof(app, user, proof.given, proof.rp, proof.origin);
  await removePasskeys(app, user, passkeyUuid, caller);
}
