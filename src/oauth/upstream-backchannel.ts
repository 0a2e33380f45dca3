// The back-channel logout URI of each upstream provider (OpenID Connect Back-Channel Logout 1.0
// §2.5): the provider POSTs a logout token when a session of one of its users ends; Tessera ends
// the browser sessions that signed in through that upstream session, and every Tessera session
// issued through them (services/integrations/upstream-oidc/logout.ts). Shown in the provider's
// representation as `backchannel_logout_uri`, beside its `redirect_uri`. The caller is the provider
// itself, authenticated by the logout token's signature: no other credential.
import { z } from "zod";
import { uuidParam } from "../domain/validate.ts";
import { RouteGroup } from "../http/route.ts";
import { LogoutTokenRefused, receiveLogoutToken } from "../services/integrations/upstream-oidc/logout.ts";
import { OAuthError } from "../services/oidc/oauth-error.ts";
import { formOf } from "./client-auth.ts";

/** A logout token is a few kilobytes at most; a larger one is not read further. */
const MAX_LOGOUT_TOKEN = 16_384;

export function upstreamBackchannelRoutes(): RouteGroup {
  return new RouteGroup("oidc", "oauth").post(
    "/oidc/upstream/{uuid}/backchannel-logout",
    {
      summary:
        "An upstream provider's back-channel logout URI (Back-Channel Logout 1.0 §2.5): its logout token ends the Tessera sessions of that upstream session",
      operationId: "upstreamOidcBackchannelLogout",
      params: z.object({ uuid: uuidParam }),
      bodyType: "form",
      body: z.record(z.string(), z.unknown()),
      responses: {
        200: "The logout token was accepted (§2.8); the sessions it names, if any, ended",
        400: "`{error: invalid_request, error_description}` (§2.8): no, or an invalid, logout token; an unknown or disabled provider",
        503: "`temporarily_unavailable`",
      },
    },
    async ({ c, app, params, body }) => {
      const token = formOf(body).logout_token;
      if (!token || token.length > MAX_LOGOUT_TOKEN)
        throw new OAuthError(400, "invalid_request", "logout_token is required");
      try {
        await receiveLogoutToken(app, params.uuid, token);
      } catch (e) {
        if (!(e instanceof LogoutTokenRefused)) throw e;
        app.log.info("upstream logout token refused", { provider_uuid: params.uuid, reason: e.reason });
        // §2.8: a 400 with an error; why precisely stays in the log (no help for a forger).
        throw new OAuthError(400, "invalid_request", "the logout token was not accepted");
      }
      // §2.8: 200 on success, and never cached.
      c.header("Cache-Control", "no-store");
      return c.body(null, 200);
    },
  );
}
