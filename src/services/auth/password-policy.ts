// The password policy of NIST SP 800-63B §3.1.1.2, applied wherever a password is set (user creation,
// registration, a change, a reset, the bootstrap administrator) — never to a login, nor to the hashes an
// import or an adopted wazo-auth database brings: those keep verifying as they are.
// - a minimum length (the tenant's effective minimum, tenant-password-policy.ts), counted in Unicode code
//   points of the password as it is hashed (Tessera hashes what it receives, without normalisation, so
//   wazo-auth's hashes verify unchanged); the maximum is the request cap (1,024, NIST: at least 64);
// - no composition rule;
// - not on the list of commonly used and breached passwords (common-passwords.ts), case-insensitively;
// - not the user's own username or email address (§3.1.1.2's context-specific words).
// A refusal is the one 400 body, `details.<field>` naming the rule; nothing else is revealed.
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { InvalidData } from "../../domain/errors.ts";
import { effectiveMinLength } from "../identity/tenant-password-policy.ts";
import { comparable, isCommonPassword } from "./common-passwords.ts";

export interface PasswordProblem {
  constraint_id: string;
  constraint: unknown;
  message: string;
}

export interface PasswordRules {
  minLength: number;
  commonPasswords: boolean;
}

/** Unicode code points, as NIST counts characters (a surrogate pair, an emoji, is one). */
export const codePoints = (s: string): number => [...s].length;

/** The first rule `password` breaks, or null. `logins` are the user's username and email addresses. */
export async function passwordProblem(
  password: string,
  rules: PasswordRules,
  logins: readonly (string | null | undefined)[],
): Promise<PasswordProblem | null> {
  if (codePoints(password) < rules.minLength)
    return {
      constraint_id: "length",
      constraint: { min: rules.minLength },
      message: `Shorter than minimum length ${rules.minLength}.`,
    };
  const typed = comparable(password);
  if (logins.some((login) => login && comparable(login) === typed))
    return {
      constraint_id: "not_login",
      constraint: "neither the username nor an email address",
      message: "Must not be the username or an email address.",
    };
  if (rules.commonPasswords && (await isCommonPassword(password)))
    return {
      constraint_id: "not_common",
      constraint: "not a commonly used or breached password",
      message: "Too common: on a list of commonly used or breached passwords.",
    };
  return null;
}

export interface PasswordToCheck {
  /** The tenant whose effective minimum applies: the user's. */
  tenantUuid: string;
  password: string;
  logins: readonly (string | null | undefined)[];
  /** The request body's field, for `details` (`password`, `new_password`). */
  field: string;
  resource?: string;
}

/** 400 `invalid-data` with `details[field]` when the password breaks the tenant's policy. */
export async function enforcePasswordPolicy(app: AppContext, db: DbOrTx, check: PasswordToCheck): Promise<void> {
  const rules = {
    minLength: await effectiveMinLength(app, db, check.tenantUuid),
    commonPasswords: app.config.password_policy.common_passwords,
  };
  const problem = await passwordProblem(check.password, rules, check.logins);
  if (problem) throw new InvalidData(check.resource ?? "users", { [check.field]: problem });
}

/** The message of a password refusal (`enforcePasswordPolicy` on `password`), or null for any other error. */
export function passwordRefusal(e: unknown): string | null {
  const detail = e instanceof InvalidData ? (e.details.password as { message?: unknown } | undefined) : undefined;
  return typeof detail?.message === "string" ? detail.message : null;
}
