// The plugin SDK: everything a plugin may import from Tessera, in one module (docs/plugins.md "The
// SDK"). Plugins receive the service's functions already bound (`PluginDependencies.services`,
// types.ts PluginServices); what this module exports besides the interfaces is pure (errors, value
// parsers, LDAP filter helpers) or works on what the service hands the plugin (the login's
// transaction in `onTokenIssued`). It is the stable surface: the rest of src/ may change between
// versions, and the stock plugins (plugins/) import nothing else (tests/ops/layering.test.ts).
export type {
  BackendPlugin,
  CompletedSamlLogin,
  IdpPlugin,
  IssuedLogin,
  LdapDirectoryConfig,
  LoginArgs,
  MetadataPlugin,
  PluginDependencies,
  PluginServices,
  PluginUser,
} from "./types.ts";
export type {
  ExternalAuthPlugin,
  ExternalAuthServices,
  ExternalHandler,
  ExternalRequest,
  ExternalResponse,
} from "./external-auth-types.ts";
export type {
  ConfirmationContext,
  ConnectionParams,
  EmailNotificationPlugin,
  EmailPluginConfig,
  PasswordResetContext,
  NoticeContext,
  TemplateFormatter,
} from "./email-types.ts";
export type { DbOrTx } from "../db/index.ts";
/** Refusals a plugin throws: 401 (AuthenticationFailed), 400, 404, 503 (the plugin's own server is down). */
export { AuthenticationFailed, InvalidData, NotFound, ServiceUnavailable } from "../domain/errors.ts";
/** A zod error as the API's `details` (field → constraint), for InvalidData. */
export { zodDetails } from "../domain/validate.ts";
/** The user a login already resolved (kept on `args` by the login pipeline), without a query. */
export { loginUser } from "../services/auth/user-auth.ts";
/** LDAP search filters and DNs built from a login, escaped (RFC 4515, RFC 4514 §2.4). */
export { DEFAULT_SEARCH_FILTER, escapeDnValue, fillSearchFilter } from "../services/integrations/ldap-filter.ts";
/** The NameID of a completed SAML login, and remembering it with the token's session (single logout). */
export { parseNameId } from "../services/integrations/saml/saml-sessions.ts";
export { rememberSamlLogin, type SamlLoginRecord } from "../services/integrations/saml/saml-logout.ts";
