// RFC 6749 §6 and OIDC Core §12: a refresh token for a new access token, its scope narrowed at will.
import { refreshGrant } from "../grants.ts";
import type { Grant } from "./grant.ts";

export const refreshTokenGrant: Grant<"refresh_token"> = {
  type: "refresh_token",
  parameters: ["refresh_token", "scope"],
  handle: (app, client, form, { issuer, origin, abandoned }) =>
    refreshGrant(app, client, form, issuer, origin, abandoned),
};
