// Consent (OIDC Core §3.1.2.4): a third-party client shows the user what it asks for, and the user
// allows or denies. Consent is remembered per (user, client) as the set of scopes granted, so it is
// asked again only for new scopes or with `prompt=consent`. Clients registered `first_party` are
// the operator's own applications: no consent screen.
//
// `offline_access` (OIDC Core §11) is granted only with consent: shown on the screen (or granted
// before on it) for a third-party client; a first-party client's registration is the operator's
// consent. The code record's `scope` holds the GRANTED scope, which the token endpoint reads.
import { sql } from "drizzle-orm";
import { and, eq } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { oidcConsents } from "../../db/schema.ts";
import type { ClientRow } from "./clients.ts";

/** The scopes of a request the user has not granted this client yet (all of them with prompt=consent). */
export async function scopesNeedingConsent(
  app: AppContext,
  client: ClientRow,
  userUuid: string,
  scope: string[],
  prompt: string[],
): Promise<string[]> {
  if (client.firstParty) return [];
  if (prompt.includes("consent")) return scope;
  const [row] = await app.db
    .select({ scopes: oidcConsents.scopes })
    .from(oidcConsents)
    .where(and(eq(oidcConsents.userUuid, userUuid), eq(oidcConsents.clientId, client.clientId)));
  const granted = new Set(row?.scopes ?? []);
  return scope.filter((s) => !granted.has(s));
}

/** Remembers the scopes the user just allowed (added to those granted before). */
export async function rememberConsent(app: AppContext, userUuid: string, clientId: string, scope: string[]) {
  await app.db
    .insert(oidcConsents)
    .values({ userUuid, clientId, scopes: scope })
    .onConflictDoUpdate({
      target: [oidcConsents.userUuid, oidcConsents.clientId],
      set: {
        scopes: sql`(select coalesce(jsonb_agg(distinct s), '[]'::jsonb) from jsonb_array_elements_text(${oidcConsents.scopes} || excluded.scopes) s)`,
        updatedAt: new Date(),
      },
    });
}

/** What a scope means, in words a person understands (the consent screen lists these). */
export function describeScope(scope: string): string {
  switch (scope) {
    case "openid":
      return "Know who you are (your account identifier and organisation)";
    case "profile":
      return "See your name and username";
    case "email":
      return "See your email address";
    case "offline_access":
      return "Stay connected to your account when you are not using it";
    default:
      return `Access: ${scope}`;
  }
}
