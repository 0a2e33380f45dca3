// Plugin interfaces (docs/plugins.md, wazo-auth's plugin interfaces) in TypeScript. A plugin module's
// default export is the plugin object, a class (constructed with its config), or a factory
// function (called with its config).
import type { AppContext } from "../boot/context.ts";
import type { DbOrTx } from "../db/index.ts";
import type { EmailNotificationPlugin } from "./email-types.ts";
import type { ExternalAuthPlugin } from "./external-auth-types.ts";

export type PluginKind = "backends" | "idp" | "external_auth" | "email_notification" | "metadata";

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
  /** Free room for plugins to stash values between calls (e.g. real_login, pbx_user_uuid). */
  [key: string]: unknown;
}

export interface PluginDependencies {
  app: AppContext;
  /** Loaded backends by name (IdPs pick theirs from here). */
  backends: ReadonlyMap<string, BackendPlugin>;
  config: Record<string, unknown>;
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
