// GET|PUT|DELETE /0.1/backends/ldap (wazo-auth's backend and LDAP API): the scoping tenant's LDAP directory.
import { isIP } from "node:net";
import { z } from "zod";
import { RouteGroup } from "../http/route.ts";
import { CAPS, text } from "../domain/strings.ts";
import { intField } from "../domain/validate.ts";
import { deleteLdapConfig, getLdapConfig, putLdapConfig } from "../services/integrations/ldap-config.ts";
import { ATTRIBUTE_RE, searchFilterProblem } from "../services/integrations/ldap-filter.ts";

const HOST_NAME_RE = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$/;
const attribute = z
  .string()
  .min(1)
  .max(64)
  .regex(ATTRIBUTE_RE, "An LDAP attribute name (letters, digits, hyphens) or a numeric OID");

const ldapConfigBody = z.object({
  host: text(512, { min: 1 }).refine(
    (h) => HOST_NAME_RE.test(h) || isIP(h.replace(/^\[|\]$/g, "")) !== 0,
    "A host name or an IP address, without scheme or port",
  ),
  port: intField(1, 65535),
  protocol_version: intField(2, 3).optional(),
  protocol_security: z.enum(["ldaps", "tls"]).nullable().optional(),
  bind_dn: text(256, { min: 1 }).nullable().optional(),
  bind_password: text(CAPS.password, { min: 1 }).nullable().optional(),
  user_base_dn: text(256, { min: 1 }),
  user_login_attribute: attribute,
  user_email_attribute: attribute,
  search_filters: text(CAPS.description, { min: 1 })
    .nullable()
    .optional()
    .superRefine((value, ctx) => {
      const problem = value ? searchFilterProblem(value) : null;
      if (problem)
        ctx.addIssue({
          code: "custom",
          message: `Not a valid search filter: ${problem}`,
          params: {
            constraint_id: "ldap_filter",
            constraint: "{username}, {user_login_attribute}, {user_email_attribute}",
          },
        });
    }),
});

const configView =
  "`{tenant_uuid, host, port, protocol_version, protocol_security, bind_dn, user_base_dn, user_login_attribute, user_email_attribute, search_filters}` (never `bind_password`)";

export function ldapConfigRoutes(): RouteGroup {
  return new RouteGroup("ldap_config")
    .get(
      "/backends/ldap",
      {
        summary: "The scoping tenant's LDAP directory (every field null when none)",
        acl: "auth.backends.ldap.read",
        responses: { 200: configView },
      },
      async ({ c, app, caller }) => c.json(await getLdapConfig(app, caller)),
    )
    .put(
      "/backends/ldap",
      {
        summary:
          "Create or update the scoping tenant's LDAP directory; omitted optional fields keep their value, null clears them",
        acl: "auth.backends.ldap.update",
        body: ldapConfigBody,
        responses: { 204: "Saved", 400: "Invalid body" },
        wazoPutAnswer: { description: configView, read: ({ app, caller }) => getLdapConfig(app, caller) },
      },
      async ({ c, app, caller, body }) => {
        await putLdapConfig(app, caller, body);
        return c.body(null, 204);
      },
    )
    .delete(
      "/backends/ldap",
      {
        summary: "Remove the scoping tenant's LDAP directory (204 even if none)",
        acl: "auth.backends.ldap.delete",
        responses: { 204: "Removed" },
      },
      async ({ c, app, caller }) => {
        await deleteLdapConfig(app, caller);
        return c.body(null, 204);
      },
    );
}
