// The console's own OpenID Connect client: a first-party public client (PKCE S256, no secret) of
// the top tenant, kept by the service itself at every start so operators never register it. Its
// only redirect URI is `{public_url}/0.1/console/callback` (else the listener's own address): an
// exact, configured URL, never one made from a request's Host header, which anyone can forge
// (RFC 6749 §10.6, RFC 9700 §4.1). A tenant administrator signs in through it too: the login page
// admits users of the client's tenant and every sub-tenant.
import { eq } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { oidcClients } from "../../db/schema.ts";
import { publicBaseUrl } from "../integrations/oauth2.ts";
import { isInsecureRedirectUri } from "../oidc/redirect-uris.ts";

/** Fixed, so the console's page knows it without asking, and an operator recognises it in a list. */
export const CONSOLE_CLIENT_ID = "7e55e7a0-c045-4e00-8000-000000000001";
export const CONSOLE_PATH = "/0.1/console";

export function consoleRedirectUri(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, "")}${CONSOLE_PATH}/callback`;
}

/**
 * Creates or updates the console's client (enabled), or removes it (disabled: the off-switch also
 * closes its sign-in). Safe on many instances at once: one upsert on the fixed client_id.
 */
export async function syncConsoleClient(
  app: AppContext,
  redirectUris: string[] = [consoleRedirectUri(publicBaseUrl(app.config))],
): Promise<void> {
  if (!app.config.console.enabled) {
    await app.db.delete(oidcClients).where(eq(oidcClients.clientId, CONSOLE_CLIENT_ID));
    return;
  }
  const values = {
    tenantUuid: app.topTenantUuid,
    name: "Tessera console",
    clientType: "public",
    secretHash: null,
    redirectUris,
    postLogoutRedirectUris: [],
    // RFC 6749 §4.1 only: no refresh tokens in a browser's storage.
    grantTypes: ["authorization_code"],
    scopes: ["openid", "profile"],
    firstParty: true,
    // The operator's own configured URL, plain http when the service is served so (RFC 6749 §3.1.2.1).
    allowInsecureRedirects: redirectUris.some(isInsecureRedirectUri),
    idTokenSignedResponseAlg: app.config.oidc.default_signing_alg,
  };
  await app.db
    .insert(oidcClients)
    .values({ clientId: CONSOLE_CLIENT_ID, ...values })
    .onConflictDoUpdate({ target: oidcClients.clientId, set: values });
}
