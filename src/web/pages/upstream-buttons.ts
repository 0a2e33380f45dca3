// The login page's buttons for the upstream OpenID Connect providers of the client's tenant
// (docs/federation.md): one link each, to `authorize/upstream` with the authorization request. Links,
// not forms: the upstream's authorization endpoint is then a navigation, which the page's CSP
// `form-action` does not govern. Its words are here alone, in plain English, for the pages' catalogues.
import type { AppContext } from "../../boot/context.ts";
import { providersForSignIn } from "../../services/integrations/upstream-oidc/providers.ts";
import { REQUEST_PARAMS } from "../../services/oidc/authorize.ts";
import type { Params } from "./browser.ts";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => ESCAPES[ch]!);

export const UPSTREAM_STRINGS = {
  or: "or",
  continueWith: (name: string) => `Continue with ${name}`,
};

/**
 * The buttons' HTML (escaped here; the template prints it as is), or "" when the tenant has no provider.
 * `base`: the way back to the issuer's directory from the page (pages/oidc-login.ts `relativeBase`).
 */
export async function upstreamButtons(app: AppContext, tenantUuid: string, params: Params, base = ""): Promise<string> {
  const providers = (await providersForSignIn(app, tenantUuid)).filter((p) => p.provisioning !== "off");
  if (providers.length === 0) return "";
  const links = providers.map((p) => {
    const query = new URLSearchParams({ provider: p.uuid });
    for (const name of REQUEST_PARAMS) if (params[name] !== undefined) query.set(name, params[name]!);
    return `<p><a class="button secondary" href="${escapeHtml(base)}authorize/upstream?${escapeHtml(query.toString())}">${escapeHtml(UPSTREAM_STRINGS.continueWith(p.displayName))}</a></p>`;
  });
  return `<p class="or">${UPSTREAM_STRINGS.or}</p>\n<div class="upstream-providers">${links.join("\n")}</div>`;
}
