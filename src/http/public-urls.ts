// What this request's public addresses are, as the doors need them: the OpenID Connect issuer, the
// WebAuthn relying party, the link base of mails. Shared by the REST API, the protocol endpoints and
// the pages, so no route module imports another for them.
import type { Context } from "hono";
import type { AppContext } from "../boot/context.ts";
import { MissingConfiguration } from "../domain/errors.ts";
import { relyingParty } from "../services/auth/webauthn.ts";
import { publicConnection } from "../services/integrations/notifications.ts";
import { issuerOf } from "../services/oidc/discovery.ts";
import { requestScriptName } from "./request-origin.ts";
import type { Env } from "./route.ts";

/** The issuer as this request sees it (see `issuerOf`; `X-Script-Name` only from a trusted proxy). */
export const requestIssuer = (c: Context<Env>, app: AppContext) =>
  issuerOf(app, new URL(c.req.url).origin, requestScriptName(c, app.config.rest_api.trusted_proxies));

/** The WebAuthn relying party of this request's origin (see `relyingParty`). */
export const requestRp = (c: Context<Env>, app: AppContext) => relyingParty(app, new URL(c.req.url).origin);

/**
 * The link parts of mails: the configured `public_url`. Without it the link would come from the
 * request's Host header, which anyone can forge (reset-link poisoning), so no mail is sent: 503
 * naming the setting, the same answer whoever the mail was for (it reveals no user).
 */
export const requestConnection = (c: Context<Env>, resource: string) => {
  const conn = publicConnection(c.get("app").config.public_url);
  if (!conn)
    throw new MissingConfiguration(
      resource,
      "public_url",
      "Mails linking back to the service need public_url (its public base URL) in the configuration",
    );
  return conn;
};
