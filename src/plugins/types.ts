// Plugin interfaces (docs/plugins.md, wazo-auth's plugin interfaces) in TypeScript. A plugin module's
// default export is the plugin object, a class (constructed with its config), or a factory
// function (called with its config).
import type { Config } from "../config/config.ts";
import type { DbOrTx } from "../db/index.ts";
import type { ldapConfigs, samlSessions } from "../db/schema.ts";
import type { Logger } from "../observe/log.ts";
import type { EmailNotificationPlugin } from "./email-types.ts";
import type { ExternalAuthPlugin } from "./external-auth-types.ts";

export type PluginKind = "backends" | "idp" | "external_auth" | "email_notification" | "metadata";

/** Who an upstream OpenID sign-in logs in (services/integrations/upstream-oidc/sign-in.ts). */
export interface UpstreamLoginOutcome {
  userUuid: string;
  login: string;
  providerTenantUuid: string;
  providerUuid: string;
  /**
   * The provider has `trust_amr` and the `amr` of the ID token Tessera verified shows a multi-factor
   * authentication (services/integrations/upstream-oidc/amr.ts): the tenant's MFA requirement is met.
   */
  upstreamMfa: boolean;
}

/** The mutable login-request record handed to backends and IdPs (§12.1 `args`). */
export interface LoginArgs {
  login: string | null;
  password: string | null;
  mobile: boolean;
  userAgent: string;
  remoteAddr: string;
  /** The JSON body of POST /0.1/token (backend, expiration, access_type, client_id, domain_name, ...). */
  body: Record<string, unknown>;
  /** Raw request headers (lower-case names), for IdPs that read them. */
  headers: Record<string, string>;
  /** Extra ACL prepended by the token service (default policy, §4.4). */
  acl: string[];
  /**
   * Set by the `oidc` identity provider (plugins/idp/oidc.ts) from UpstreamLoginOutcome.upstreamMfa: the
   * login asks no second factor and no enrolment (services/auth/authentication.ts). Never from the body.
   */
  upstreamMfa?: boolean;
  /** Free room for plugins to stash values between calls (e.g. real_login, pbx_user_uuid). */
  [key: string]: unknown;
}

export interface PluginDependencies {
  /** What a plugin may call of the service, already bound to it (docs/plugins.md "The SDK"). */
  services: PluginServices;
  /** Loaded backends by name (IdPs pick theirs from here). */
  backends: ReadonlyMap<string, BackendPlugin>;
  /** The plugin's own `config` entry. */
  config: Record<string, unknown>;
}

/** A user as a login finds it (by confirmed email or username, enabled only). */
export interface PluginUser {
  uuid: string;
  tenantUuid: string;
  username: string | null;
  purpose: string;
  authenticationMethod: string;
}

/** A tenant's LDAP directory settings (`/backends/ldap`). */
export type LdapDirectoryConfig = typeof ldapConfigs.$inferSelect;
/** A SAML login the ACS completed, waiting for POST /0.1/token with its `saml_session_id`. */
export type CompletedSamlLogin = typeof samlSessions.$inferSelect;

/**
 * The service as plugins see it: functions bound to the running service (no database handle, no
 * context object). This is the stable surface; the rest of src/ may change between versions.
 */
export interface PluginServices {
  log: Logger;
  /** The service's configuration (read-only). */
  serviceConfig: Readonly<Config>;
  /** The enabled user a login names (confirmed email, else username; wazo-auth's login resolution). */
  findUserByLogin(login: string): Promise<PluginUser | null>;
  /** As findUserByLogin, reusing the user the login already read when `args` carries it. */
  findLoginUser(login: string, args?: LoginArgs): Promise<PluginUser | null>;
  /** The wazo_user password check: the login's user, its method, its password hash (and its throttling). */
  checkUserPassword(login: string, password: string, args: LoginArgs): Promise<boolean>;
  /** The user's ACL: its policies' and its groups' policies' access entries. */
  userAcl(userUuid: string): Promise<string[]>;
  /** The token metadata of a user's login (auth_id, tenant_uuid, …, then the purpose's metadata plugins). */
  userMetadata(login: string, args: LoginArgs): Promise<Record<string, unknown>>;
  /** True when the user holds a policy with `policySlug` or belongs to a group with `groupSlug`. */
  hasPolicyOrGroupSlug(userUuid: string, policySlug: string, groupSlug: string): Promise<boolean>;
  /** The tenant a login request names (`domain_name` or `tenant_id` of POST /0.1/token's body), if any. */
  findLoginTenant(body: Record<string, unknown>): Promise<string | null>;
  /** True when `tenantUuid` is `ancestorUuid` or one of its sub-tenants. */
  isSubtenant(tenantUuid: string, ancestorUuid: string): Promise<boolean>;
  /** The tenant's LDAP directory, if it has one. */
  findLdapConfig(tenantUuid: string): Promise<LdapDirectoryConfig | null>;
  /** Takes a completed SAML login, once (a second call finds nothing). */
  consumeSamlLogin(sessionId: string): Promise<CompletedSamlLogin | null>;
  /** The SAML configuration of a domain name: the tenant whose IdP speaks for it. */
  samlConfigForDomain(domain: string): Promise<{ tenantUuid: string } | null>;
  /**
   * Takes a sign-in that a tenant's upstream OpenID Connect provider completed (`upstream_login` of
   * POST /0.1/token, services/integrations/upstream-oidc/), once: its user, the name it logs in with,
   * and the provider's tenant; `upstreamMfa` when the provider's trusted `amr` met the tenant's MFA
   * requirement (docs/federation.md "Multi-factor"). Null when unknown, used or expired.
   */
  consumeUpstreamLogin(completion: string): Promise<UpstreamLoginOutcome | null>;
  /**
   * POST /0.1/token's `idp_token`: the user linked to the `sub` of an ID token that one of the tenants'
   * upstream providers signed for its client, once. `tenantUuid` narrows the providers. Null: refused.
   */
  verifyUpstreamIdToken(idToken: string, tenantUuid: string | null): Promise<UpstreamLoginOutcome | null>;
  /** The login a refresh token of `clientId` stands for, with the user's effective method. */
  findRefreshTokenLogin(
    refreshToken: string,
    clientId: string,
    args?: LoginArgs,
  ): Promise<{ uuid: string; login: string; metadata: Record<string, unknown>; method: string } | null>;
  /** The backend of an authentication method: native → wazo_user, else the IdP's `getBackend`. */
  backendForMethod(method: string, args: LoginArgs): BackendPlugin;
}

export interface BackendPlugin {
  load?(deps: PluginDependencies): void | Promise<void>;
  verifyPassword(login: string, password: string, args: LoginArgs): Promise<boolean>;
  getAcl?(login: string, args: LoginArgs): Promise<string[]>;
  /** Must contain `auth_id` and `xivo_uuid`; normally `uuid`, `tenant_uuid`, `pbx_user_uuid`, `purpose`. */
  getMetadata?(login: string, args: LoginArgs): Promise<Record<string, unknown>>;
  getPersistentMetadata?(login: string, args: LoginArgs): Promise<Record<string, unknown>>;
}

export interface IdpPlugin {
  authenticationMethod: string;
  loaded: boolean;
  load(deps: PluginDependencies): void | Promise<void>;
  /** Cheap: request attributes only, no I/O. */
  canAuthenticate(args: LoginArgs): boolean;
  /** Throws on failure; returns the backend supplying ACL/metadata and the user's login. */
  verifyAuth(args: LoginArgs): Promise<{ backend: BackendPlugin; login: string }>;
  getBackend(args: LoginArgs): BackendPlugin;
  /**
   * Optional: runs inside the login's transaction once the token and its session exist (e.g. to
   * remember the IdP's session for a later single logout). Throwing cancels the login.
   */
  onTokenIssued?(args: LoginArgs, issued: IssuedLogin, tx: DbOrTx): Promise<void>;
}

/** The token a login just issued, as IdP plugins see it. */
export interface IssuedLogin {
  tokenUuid: string;
  sessionUuid: string;
  userUuid: string | null;
  refreshTokenUuid: string | null;
}

export interface MetadataPlugin {
  load?(deps: PluginDependencies): void | Promise<void>;
  getTokenMetadata(login: string, args: LoginArgs): Promise<Record<string, unknown>>;
}

export interface LoadedPluginReport {
  kind: PluginKind;
  name: string;
  module: string;
  status: "ok" | "fail";
  error?: string;
}

export interface PluginRegistry {
  backends: Map<string, BackendPlugin>;
  /** Configured IdP plugins, tried by ascending priority. */
  idp: Map<string, { plugin: IdpPlugin; priority: number }>;
  /** The built-in IdPs: refresh tokens (tried first) and native (tried last). */
  builtinIdp: { refreshToken?: IdpPlugin; native?: IdpPlugin };
  metadata: Map<string, MetadataPlugin>;
  externalAuth: Map<string, ExternalAuthPlugin>;
  email: Map<string, EmailNotificationPlugin>;
  report: LoadedPluginReport[];
}

export function emptyRegistry(): PluginRegistry {
  return {
    backends: new Map(),
    idp: new Map(),
    builtinIdp: {},
    metadata: new Map(),
    externalAuth: new Map(),
    email: new Map(),
    report: [],
  };
}
