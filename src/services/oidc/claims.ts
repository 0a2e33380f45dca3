// Claims about the user, by scope (OIDC Core §5.4): `profile` → name, preferred_username (and the
// given/family names Tessera holds); `email` → email, email_verified. `tenant_uuid` always.
import { and, eq } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { emails, users } from "../../db/schema.ts";

export async function userClaims(
  app: AppContext,
  userUuid: string,
  scope: string[],
): Promise<Record<string, unknown> | null> {
  const [user] = await app.db.select().from(users).where(eq(users.uuid, userUuid));
  if (!user) return null;
  const claims: Record<string, unknown> = { sub: user.uuid, tenant_uuid: user.tenantUuid };
  if (scope.includes("profile")) {
    const name = [user.firstname, user.lastname].filter(Boolean).join(" ");
    if (name) claims.name = name;
    if (user.firstname) claims.given_name = user.firstname;
    if (user.lastname) claims.family_name = user.lastname;
    if (user.username) claims.preferred_username = user.username;
  }
  if (scope.includes("email")) {
    const [main] = await app.db
      .select()
      .from(emails)
      .where(and(eq(emails.userUuid, user.uuid), eq(emails.main, true)));
    if (main) {
      claims.email = main.address;
      claims.email_verified = main.confirmed;
    }
  }
  return claims;
}
