// RFC 6749 §4.1.3 and OIDC Core §3.1.3: a code from the authorization endpoint, with its PKCE
// verifier (RFC 7636 §4.5), for the tokens of the user who signed in.
import { exchangeAuthorizationCode } from "../token-endpoint.ts";
import type { Grant } from "./grant.ts";

export const authorizationCodeGrant: Grant<"authorization_code"> = {
  type: "authorization_code",
  parameters: ["code", "redirect_uri", "code_verifier"],
  handle: (app, client, form, { issuer, origin }) => exchangeAuthorizationCode(app, client, form, issuer, origin),
};
