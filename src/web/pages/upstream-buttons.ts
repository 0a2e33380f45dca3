// The login page's links to the upstream OpenID Connect providers of the client's tenant
// (docs/federation.md): one each, to `authorize/upstream` with the authorization request. Links, not
// forms: the upstream's authorization endpoint is then a navigation, which the page's CSP
// `form-action` does not govern. The template words them from the catalogues (`sign_in_with`).
import type { AppContext } from "../../boot/context.ts";
import { UpstreamUnavailable, upstreamMetadata } from "../../services/integrations/upstream-oidc/discovery.ts";
import { findProvider, providersForSignIn } from "../../services/integrations/upstream-oidc/providers.ts";
import { REQUEST_PARAMS } from "../../services/oidc/authorize.ts";

export interface UpstreamLink {
  /** Relative to the authorization page, carrying the authorization request. */
  href: string;
  /** The provider's display name. */
  name: string;
}

/**
 * One link per provider a user may sign in with (none when the tenant has none). `base`: the way back to
 * the issuer's directory from the page (pages/oidc-login.ts `relativeBase`).
 */
export async function upstreamLinks(
  app: AppContext,
  tenantUuid: string,
  params: Readonly<Record<string, string | undefined>>,
  base = "",
): Promise<UpstreamLink[]> {
  const providers = (await providersForSignIn(app, tenantUuid)).filter((p) => p.provisioning !== "off");
  return providers.map((p) => ({ href: upstreamStartHref(p.uuid, params, base), name: p.displayName }));
}

/** Where a provider's sign-in starts (web/upstream-sign-in.ts), with the authorization request; `base` as above. */
export function upstreamStartHref(
  providerUuid: string,
  params: Readonly<Record<string, string | undefined>>,
  base = "",
): string {
  const query = new URLSearchParams({ provider: providerUuid });
  for (const name of REQUEST_PARAMS) if (params[name] !== undefined) query.set(name, params[name]!);
  return `${base}authorize/upstream?${query.toString()}`;
}
/**
 * Where the identifier step's answer may lead the browser for an upstream provider: its authorization
 * endpoint (the page's CSP `form-action` governs a form's redirects too). Null when it cannot be
 * reached now (the sign-in then ends on its own error page).
 */
export async function authorizationEndpointOf(app: AppContext, providerUuid: string): Promise<string | null> {
  const provider = await findProvider(app, providerUuid);
  if (!provider) return null;
  try {
    const metadata = await upstreamMetadata(app, provider.issuer, { templateIssuer: provider.preset === "entra" });
    return metadata.authorization_endpoint;
  } catch (e) {
    if (e instanceof UpstreamUnavailable) return null;
    throw e;
  }
}
