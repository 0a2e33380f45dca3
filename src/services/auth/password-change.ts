// "Must change the password at next login" (docs/security.md): set by an administrator with a new
// password, cleared by the user's next one. The hosted sign-in page asks for the new password
// before continuing (web/flow/second-step.ts); POST /0.1/token, which has no page to show, issues a token
// that may only change the password — as the enrol-only ACL of a tenant requiring MFA — and no
// refresh token: the client changes the password (PUT /users/{uuid}/password, which ends every
// session of the user) and logs in again with the new one.

/** The one access of a must-change token: the user's own password change (wazo-auth's ACL for it). */
export const passwordChangeAcl = (userUuid: string) => `auth.users.${userUuid}.password.update`;

/**
 * The whole ACL of a login whose user has actions pending: the MFA enrol-only ACL (or null) joined
 * with the password change when the user must change its password; null when nothing is pending.
 */
export function pendingActionsAcl(
  enrolOnly: string[] | null,
  user: { uuid: string; passwordChangeRequired: boolean } | null,
): string[] | null {
  if (!user?.passwordChangeRequired) return enrolOnly;
  return [...(enrolOnly ?? []), passwordChangeAcl(user.uuid)];
}
