// SAML login and logout (wazo-auth's SAML login and logout). No ACL: the browser and the IdP call these;
// the IdP's signatures, the SAML session and the token itself are the credentials.
import { z } from "zod";
import { requestToken } from "../http/auth.ts";
import { RouteGroup } from "../http/route.ts";
import { CAPS, text } from "../domain/strings.ts";
import { acceptSamlResponse, startSamlLogin } from "../services/integrations/saml/saml-login.ts";
import { finishSamlLogout, startSamlLogout } from "../services/integrations/saml/saml-logout.ts";

const DOMAIN_RE = /^(?=.{1,253}$)(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?$/;

export function samlRoutes(): RouteGroup {
  return new RouteGroup("saml")
    .post(
      "/saml/sso",
      {
        summary: "Start a SAML login: the IdP URL to send the browser to, and the saml_session_id for POST /token",
        description:
          "`redirect_url` is where the browser comes back after the IdP (an absolute http(s) URL; see `saml.allowed_redirect_origins`); `domain` is a tenant domain with a SAML configuration.",
        body: z.object({ redirect_url: text(2048, { min: 1 }), domain: text(253).regex(DOMAIN_RE) }),
        responses: {
          200: "`{location, saml_session_id}`",
          400: "Invalid body or redirect URL",
          404: "No SAML configuration for the domain",
        },
      },
      async ({ c, app, body }) => c.json(await startSamlLogin(app, body.redirect_url, body.domain)),
    )
    .post(
      "/saml/acs",
      {
        summary: "Assertion consumer service: the IdP's signed response (HTTP-POST binding)",
        description:
          "Answers 302 to the login's `redirect_url`, or to `redirect_url?login_failure_code=500` when the response is refused.",
        body: z.object({ SAMLResponse: z.string().min(1).max(1_000_000), RelayState: z.string().min(1).max(1024) }),
        bodyType: "form",
        responses: {
          302: "Back to the application",
          400: "RelayState and/or SAMLResponse missing",
          404: "No pending SAML login for this RelayState",
        },
      },
      async ({ c, app, body }) => c.redirect(await acceptSamlResponse(app, body.SAMLResponse, body.RelayState), 302),
    )
    .get(
      "/saml/logout",
      {
        summary: "SAML logout: ends the token's session and answers the IdP's logout URL",
        headers: { "X-Auth-Token": "The token (or `?token=`)" },
        query: z.object({ token: text(CAPS.queryValue).optional() }),
        responses: { 200: "`{location}`", 404: "No such token, or the token was not issued by a SAML login" },
      },
      async ({ c, app }) => c.json(await startSamlLogout(app, requestToken(c, true))),
    )
    .get(
      "/saml/sls",
      {
        summary: "Single logout service: the IdP's signed LogoutResponse (HTTP-Redirect binding)",
        query: z.object({
          SAMLResponse: text(CAPS.queryValue).optional(),
          RelayState: text(CAPS.queryValue).optional(),
          SigAlg: text(CAPS.queryValue).optional(),
          Signature: text(CAPS.queryValue).optional(),
        }),
        responses: {
          302: "To `redirect_url?logged_out=true`",
          400: "Missing, unsigned or refused LogoutResponse",
          404: "No pending logout for this RelayState",
        },
      },
      async ({ c, app, query }) => {
        const rawQuery = new URL(c.req.url).search.replace(/^\?/, "");
        return c.redirect(await finishSamlLogout(app, query as Record<string, string>, rawQuery), 302);
      },
    );
}
