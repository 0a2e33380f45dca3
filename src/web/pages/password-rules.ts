// The password rules as they apply to one user (services/auth/password-policy.ts: the tenant's
// effective minimum length, not the username or an address, not a common password), in the words
// of the page's catalogue, and a refusal of those rules in the same words.
import type { AppContext } from "../../boot/context.ts";
import { InvalidData } from "../../domain/errors.ts";
import type { PasswordProblem } from "../../services/auth/password-policy.ts";
import { effectiveMinLength } from "../../services/identity/tenant-password-policy.ts";
import { msg, type PageText } from "./language.ts";

export async function passwordRules(app: AppContext, tenantUuid: string): Promise<PageText[]> {
  const rules: PageText[] = [
    msg("password.rule_length", { min: await effectiveMinLength(app, app.db, tenantUuid) }),
    "password.rule_no_login",
  ];
  if (app.config.password_policy.common_passwords) rules.push("password.rule_not_common");
  return rules;
}

/** The rule a refused password broke, in the page's words; null when `e` is no password refusal. */
export function passwordRefusalText(e: unknown): PageText | null {
  if (!(e instanceof InvalidData)) return null;
  // The refusal names the request's field (`password`, `new_password`): whichever it is.
  const problem = Object.values(e.details).find(
    (d): d is PasswordProblem => typeof d === "object" && d !== null && "constraint_id" in d,
  );
  switch (problem?.constraint_id) {
    case "length":
      return msg("password.refused_length", { min: (problem.constraint as { min: number }).min });
    case "not_login":
      return "password.refused_login";
    case "not_common":
      return "password.refused_common";
    default:
      return null;
  }
}
