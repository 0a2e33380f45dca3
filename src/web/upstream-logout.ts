// The way back from an upstream provider's logout (OpenID Connect RP-Initiated Logout 1.0 §3): the
// provider's `post_logout_redirect_uri` for Tessera, one per provider (its representation shows it,
// to register upstream). Tessera's own logout (web/logout.ts) already ended its sessions before
// sending the browser there; the `state` it sent names where the logout continues — the relying
// party's registered post-logout redirect URI with its `state` (checked then), or the signed-out page.
// An unknown, used or expired `state` shows the signed-out page: it never redirects anywhere else.
import type { Context } from "hono";
import { z } from "zod";
import type { AppContext } from "../boot/context.ts";
import { uuidParam } from "../domain/validate.ts";
import { type Env, queryObject, RouteGroup } from "../http/route.ts";
import { finishUpstreamLogout } from "../services/integrations/upstream-oidc/logout.ts";
import { outagePage, page, redirectTo, stringParams } from "./pages/browser.ts";

async function loggedOut(c: Context<Env>, app: AppContext, providerUuid: string): Promise<Response> {
  const query = stringParams(queryObject(c));
  const done = await finishUpstreamLogout(app, providerUuid, query.state);
  if (done?.continueUrl) return redirectTo(c, done.continueUrl);
  return page(c, app, { step: "signed_out" }, 200, { tenantUuid: done?.tenantUuid ?? undefined });
}

export function upstreamLogoutRoutes(): RouteGroup {
  return new RouteGroup("oidc", "page").get(
    "/oidc/upstream/{uuid}/logged-out",
    {
      summary: "An upstream provider's post-logout redirect URI (RP-Initiated Logout 1.0 §3): on to the relying party",
      operationId: "upstreamOidcLoggedOut",
      params: z.object({ uuid: uuidParam }),
      responses: {
        200: { description: "The signed-out page", contentType: "text/html" },
        303: "To the relying party's registered post_logout_redirect_uri, with its `state`",
        503: { description: "Error page: database outage", contentType: "text/html" },
      },
    },
    ({ c, app, params }) => outagePage(app, () => loggedOut(c, app, params.uuid)),
  );
}
