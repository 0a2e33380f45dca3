// RFC 6749 §4.4: a confidential client's own token, with the client's ACL.
import { clientCredentialsGrant as clientCredentials } from "../grants.ts";
import type { Grant } from "./grant.ts";

export const clientCredentialsGrant: Grant<"client_credentials"> = {
  type: "client_credentials",
  parameters: ["scope"],
  handle: (app, client, form, { origin }) => clientCredentials(app, client, form, origin),
};
