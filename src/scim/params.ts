// What the SCIM route modules declare alike: the query parameters of RFC 7644 §3.4.2 (read by
// services/scim/list.ts, case-insensitively), the path's resource id, the JSON body (checked by
// the services, which answer SCIM's own errors), and the answers' descriptions.
import { z } from "zod";
import { CAPS } from "../domain/strings.ts";

const optional = z.string().max(CAPS.queryValue).optional();

export const listQuery = z.object({
  filter: optional.describe('RFC 7644 §3.4.2.2, e.g. userName eq "alice"'),
  startIndex: optional.describe("1-based index of the first result"),
  count: optional.describe("Results per page (at most 1000)"),
  sortBy: optional,
  sortOrder: optional.describe("ascending or descending"),
  attributes: optional,
  excludedAttributes: optional,
});

export const readQuery = z.object({ attributes: optional, excludedAttributes: optional });

export const idParam = z.object({ id: z.string().max(CAPS.pathSegment) });

export const resourceBody = z.record(z.string(), z.unknown());

export const SCIM_HEADERS = {
  Authorization: "Bearer: a SCIM token of the tenant, or a Tessera access token holding the route's auth.scim.* access",
};

export const WRITE_HEADERS = {
  ...SCIM_HEADERS,
  "If-Match": "The meta.version the change applies to (§3.14): 412 otherwise",
};

export const ERRORS = {
  400: "RFC 7644 §3.12 error (scimType invalidFilter, invalidValue, invalidSyntax, invalidPath, noTarget…)",
  401: "No valid bearer token",
  403: "The token lacks the access, or the grant rule refuses a membership",
  404: "No such resource in the token's tenant",
};
