// The plugin SDK's functions, bound to the running service: what `PluginDependencies.services` hands
// every backend, identity provider and metadata plugin (types.ts PluginServices, docs/plugins.md).
import type { AppContext } from "../boot/context.ts";
import { backendForMethod } from "../services/auth/identity-providers.ts";
import { findLoginTenant } from "../services/auth/login-tenant.ts";
import { findRefreshTokenLogin } from "../services/auth/refresh-tokens.ts";
import {
  checkUserPassword,
  findLoginUser,
  findUserByLogin,
  hasPolicyOrGroupSlug,
  userAcl,
  userMetadata,
} from "../services/auth/user-auth.ts";
import { isSubtenant } from "../services/identity/tenant-tree.ts";
import { findLdapConfig } from "../services/integrations/ldap-config.ts";
import { samlConfigForDomain } from "../services/integrations/saml/saml-config.ts";
import { consumeCompletedLogin } from "../services/integrations/saml/saml-sessions.ts";
import { consumeUpstreamLogin, verifyUpstreamIdToken } from "../services/integrations/upstream-oidc/sign-in.ts";
import type { PluginServices } from "./types.ts";

export function pluginServices(app: AppContext): PluginServices {
  return {
    log: app.log,
    serviceConfig: app.config,
    findUserByLogin: (login) => findUserByLogin(app.db, login),
    findLoginUser: (login, args) => findLoginUser(app.db, login, args),
    checkUserPassword: (login, password, args) => checkUserPassword(app, login, password, args),
    userAcl: (userUuid) => userAcl(app.db, userUuid),
    userMetadata: (login, args) => userMetadata(app, login, args),
    hasPolicyOrGroupSlug: (userUuid, policySlug, groupSlug) =>
      hasPolicyOrGroupSlug(app.db, userUuid, policySlug, groupSlug),
    findLoginTenant: (body) => findLoginTenant(app, body),
    isSubtenant: (tenantUuid, ancestorUuid) => isSubtenant(app.db, tenantUuid, ancestorUuid, app.topTenantUuid),
    findLdapConfig: (tenantUuid) => findLdapConfig(app, tenantUuid),
    consumeSamlLogin: (sessionId) => consumeCompletedLogin(app, sessionId),
    samlConfigForDomain: (domain) => samlConfigForDomain(app, domain),
    consumeUpstreamLogin: (completion) => consumeUpstreamLogin(app, completion),
    verifyUpstreamIdToken: (idToken, tenantUuid) => verifyUpstreamIdToken(app, idToken, tenantUuid),
    findRefreshTokenLogin: (refreshToken, clientId, args) => findRefreshTokenLogin(app, refreshToken, clientId, args),
    backendForMethod: (method, args) => backendForMethod(app, method, args),
  };
}
