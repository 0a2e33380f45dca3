// Configuration: defaults ← YAML file (--config PATH, TESSERA_CONFIG, or ./config.yml) ← env.
// Key names are wazo-auth's (COMPATIBILITY.md §14) wherever a key applies.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { isProxyEntry } from "./http/request-origin.ts";
import { unknownKeyProblems } from "./config-keys.ts";

const pluginEntry = z.union([
  z.string().min(1),
  z.object({
    module: z.string().min(1),
    enabled: z.boolean().default(true),
    required: z.boolean().default(false),
    priority: z.number().int().default(100),
    config: z.record(z.string(), z.unknown()).default({}),
  }),
]);

const pluginKind = z.record(z.string(), pluginEntry).default({});

const policySpec = z.object({
  acl: z.array(z.string()).default([]),
  description: z.string().nullable().optional(),
  shared: z.boolean().default(false),
});

const templatePath = (name: string) => fileURLToPath(new URL(`../templates/${name}`, import.meta.url));

export const configSchema = z
  .object({
    rest_api: z
      .object({
        listen: z.string().min(1).default("127.0.0.1"),
        port: z.coerce.number().int().min(0).max(65535).default(9497),
        /**
         * Accepted for wazo-auth's configuration files, but trusts nothing by itself: X-Forwarded-For
         * is believed only from `trusted_proxies` (a start-up warning when this is set without them).
         */
        num_proxies: z.number().int().min(0).default(0),
        /** Socket peers (addresses or CIDRs) whose X-Forwarded-For is believed (src/http/request-origin.ts). */
        trusted_proxies: z.array(z.string().refine(isProxyEntry, "an IP address or CIDR")).default([]),
        cors: z
          .object({
            enabled: z.boolean().default(true),
            allow_headers: z
              .array(z.string())
              .default(["Content-Type", "Authorization", "X-Auth-Token", "Wazo-Tenant", "Wazo-Session-Type"]),
          })
          .default({
            enabled: true,
            allow_headers: ["Content-Type", "Authorization", "X-Auth-Token", "Wazo-Tenant", "Wazo-Session-Type"],
          }),
      })
      .prefault({}),
    db_uri: z.string().min(1).nullable().default(null),
    db_pool_size: z.number().int().min(1).max(500).default(20),
    /** Seconds a request may wait for the database (and the status probe) before a 503. */
    db_timeout: z.number().min(0.1).max(300).default(5),
    /**
     * While cache invalidation (LISTEN) is lost — a database failover, restart or partition — keep
     * answering token checks from the token cache for at most this many seconds (a revocation made
     * meanwhile may be missed that long); 0 = strict: the cache is bypassed at once and checks read the
     * database (503 while it is away). docs/scaling.md "Scaling and high availability".
     */
    token_check_staleness: z.number().min(0).max(300).default(0),
    /** PGlite only: the embedded database's thread not answering a heartbeat for this long stops the service (exit 1); 0: off. */
    db_watchdog_seconds: z.number().min(0).max(3600).default(30),
    /** Seconds of draining after SIGTERM before the listening socket closes (answers say Connection: close). */
    shutdown_drain_seconds: z.number().min(0).max(60).default(1),
    data_dir: z.string().min(1).default("./data"),
    uuid: z.string().nullable().default(null),
    log_level: z.enum(["debug", "info", "warning", "error", "critical"]).default("info"),
    debug: z.boolean().default(false),
    /** One info line per request; off: only answers >= 400 and slow requests (see http/request-log.ts). */
    access_log: z.boolean().default(false),
    /** Log to this file (append, reopened on SIGHUP) instead of standard error. */
    log_filename: z.string().min(1).nullable().default(null),
    /** Processes serving the port (PostgreSQL only; PGlite is single-process). See src/cluster.ts. */
    workers: z.number().int().min(1).max(256).default(1),
    default_token_lifetime: z.number().int().min(1).max(315360000).default(7200),
    token_cleanup_interval: z.number().min(0).default(60),
    token_cleanup_batch_size: z.number().int().min(1).default(5000),
    max_user_concurrent_sessions: z.number().int().min(1).default(100),
    /** argon2id for new hashes; pbkdf2_sha512 writes wazo-auth's format (to roll back to wazo-auth). */
    password_hash_algorithm: z.enum(["argon2id", "pbkdf2_sha512"]).default("argon2id"),
    /** PBKDF2 cost of new hashes with pbkdf2_sha512 (wazo-auth verifies only 250000). */
    password_hash_iterations: z.number().int().min(1).default(250000),
    /** Password derivations run at once, on their own low-priority threads; 0 = one per core. */
    password_hash_concurrency: z.number().int().min(0).max(256).default(0),
    /** Derivations waiting for a thread before new logins are answered 503 at once. */
    password_hash_queue: z.number().int().min(1).max(100_000).default(128),
    /** Brute-force protection of POST /0.1/token and GET /0.1/users/password/reset (docs/security.md "Login throttling"). */
    login_throttling: z
      .object({
        enabled: z.boolean().default(true),
        /** Failed logins of one login name from one client address before that pair is locked (Keycloak's default: 30). */
        max_failures: z.number().int().min(1).default(30),
        /**
         * Failed logins of one login name from all addresses together before it is slowed (never
         * locked: a clean address still logs in): each attempt waits `slowdown_seconds`, and a pair
         * locks at its first failure.
         */
        max_failures_per_login: z.number().int().min(1).default(1000),
        slowdown_seconds: z.number().min(0).max(10).default(1),
        /** Failed logins from one client address (an IPv6 /64) before it is throttled. */
        max_failures_per_address: z.number().int().min(1).default(100),
        /** First wait once a threshold is reached; doubles with each further failure. */
        wait_increment_seconds: z.number().int().min(1).default(60),
        max_wait_seconds: z.number().int().min(1).default(900),
        /** A counter is forgotten this long after its last failure (Keycloak: 12 h). */
        failure_reset_seconds: z.number().int().min(1).default(43200),
        /** Client addresses never throttled per address (their logins still are): local daemons. */
        exempt_addresses: z.array(z.string()).default(["127.0.0.1", "::1"]),
        /** Password-reset requests (each counts) per login and per address before throttling. */
        password_reset_max_requests: z.number().int().min(1).default(5),
        password_reset_max_requests_per_address: z.number().int().min(1).default(30),
      })
      .prefault({}),
    /** argon2id cost: OWASP's minimum by default; lower values start with a warning (tests only). */
    argon2: z
      .object({
        memory_kib: z.number().int().min(8).max(4_194_304).default(19456),
        time_cost: z.number().int().min(1).max(100).default(2),
      })
      .prefault({}),
    bootstrap_user_on_startup: z.boolean().default(false),
    bootstrap_user_username: z.string().min(1).nullable().default(null),
    bootstrap_user_password: z.string().min(1).nullable().default(null),
    bootstrap_user_purpose: z.enum(["user", "internal", "external_api"]).default("internal"),
    bootstrap_user_policy_slug: z.string().min(1).default("wazo_default_master_user_policy"),
    default_user_policy: z.string().nullable().default(null),
    backend_policies: z.record(z.string(), z.string()).default({}),
    default_policies: z.record(z.string(), policySpec).default({}),
    all_users_policies: z.record(z.string(), z.boolean()).default({}),
    tenant_default_groups: z
      .record(z.string(), z.object({ policies: z.record(z.string(), z.boolean()).default({}) }))
      .default({}),
    update_policy_on_startup: z.boolean().default(true),
    password_reset_expiration: z.number().int().min(1).default(172800),
    email_confirmation_expiration: z.number().int().min(1).default(172800),
    enabled_http_plugins: z.record(z.string(), z.boolean()).default({ user_registration: false }),
    enabled_metadata_plugins: z
      .record(z.string(), z.boolean())
      .default({ default_user: true, default_internal: true, default_external_api: true }),
    purpose_metadata_mapping: z
      .object({
        user: z.array(z.string()).default([]),
        internal: z.array(z.string()).default([]),
        external_api: z.array(z.string()).default([]),
      })
      .prefault({}),
    plugins: z
      .object({
        backends: pluginKind,
        idp: pluginKind,
        external_auth: pluginKind,
        email_notification: pluginKind,
        metadata: pluginKind,
      })
      .prefault({}),
    email_notification_plugin: z.string().default("smtp"),
    /** The ldap_user backend's connection settings (the per-tenant directories are in /backends/ldap). */
    ldap: z
      .object({
        /** PEM file of extra certificate authorities trusted for ldaps:// and STARTTLS (beside the system ones). */
        tls_ca_file: z.string().min(1).nullable().default(null),
        /** Seconds: TCP connect, each LDAP operation, and the whole directory conversation of a login. */
        timeout: z.number().positive().max(60).default(2),
      })
      .prefault({}),
    /**
     * Public base URL of the API (e.g. `https://auth.example.com/api/auth`): the `hostname`, `port`
     * and `prefix` of the links in emails. Unset, no such mail is sent (503): the link would come from
     * the request's Host header, which anyone can forge (reset-link poisoning).
     */
    public_url: z
      .url({ protocol: /^https?$/ })
      .nullable()
      .default(null),
    /**
     * Public base URL of this service, for the OAuth2 redirect URLs of external-auth plugins; unset,
     * `public_url`, else the listener's own address and port.
     */
    oauth2_redirect_base_url: z.string().url().nullable().default(null),
    smtp: z
      .object({
        hostname: z.string().min(1).default("localhost"),
        port: z.number().int().min(1).max(65535).default(25),
        /** Implicit TLS (SMTPS, usually port 465). */
        tls: z.boolean().default(false),
        /** Upgrade with STARTTLS when the server offers it; `true` requires it. */
        starttls: z.boolean().default(false),
        username: z.string().nullable().default(null),
        password: z.string().nullable().default(null),
        timeout: z.number().positive().default(4),
      })
      .prefault({}),
    email_confirmation_from_name: z.string().default("wazo-auth"),
    email_confirmation_from_address: z.string().default("noreply@wazo.community"),
    email_confirmation_template: z.string().default(templatePath("email_confirmation.jinja")),
    email_confirmation_subject_template: z.string().default(templatePath("email_confirmation_subject.jinja")),
    email_confirmation_get_response_body_template: z
      .string()
      .default(templatePath("email_confirmation_get_body.jinja")),
    email_confirmation_get_mimetype: z.string().default("text/html"),
    password_reset_from_name: z.string().default("wazo-auth"),
    password_reset_from_address: z.string().default("noreply@wazo.community"),
    password_reset_email_template: z.string().default(templatePath("password_reset_email.jinja")),
    password_reset_email_subject_template: z.string().default(templatePath("password_reset_email_subject.jinja")),
    amqp: z
      .object({
        uri: z.string().min(1).default("amqp://guest:guest@localhost:5672/"),
        exchange_name: z.string().min(1).default("xivo"),
        exchange_type: z.string().min(1).default("topic"),
        /** `/status` reports the bus publisher degraded when the oldest unpublished event is older than this. */
        degraded_after_seconds: z.number().min(1).max(86_400).default(60),
      })
      .nullable()
      .default(null),
    profiling_enabled: z.boolean().default(false),
    compatibility: z
      .object({
        /**
         * `empty`: every PUT answers 204 with no body (D3). `wazo`: the PUTs that wazo-auth answers with
         * 200 and the resource answer that way, for wazo-auth-client code that parses their body.
         */
        put_responses: z.enum(["empty", "wazo"]).default("empty"),
        /**
         * `revoke`: a password change, reset or removal, or disabling a user, ends its refresh tokens
         * with its sessions. `keep`: wazo-auth's older behaviour — only the sessions end, and a
         * disabled user's refresh tokens work again once it is re-enabled.
         */
        refresh_token_revocation: z.enum(["revoke", "keep"]).default("revoke"),
      })
      .prefault({}),
    /** SAML single sign-on (COMPATIBILITY.md §6.15, §6.16, §12.5, §14). */
    saml: z
      .object({
        /** Shown by GET /backends/saml/acs_url_template: the ACS URL an administrator fills in. */
        acs_url_template: z.string().min(1).default("https://{{STACK_URL}}/api/auth/0.1/saml/acs"),
        /** How long the IdP login may take, from POST /saml/sso to the ACS post. */
        saml_login_timeout_seconds: z.number().int().min(1).default(600),
        /** How long a SAML session (login, then logout context) is kept before the cleanup purges it. */
        saml_session_lifetime_seconds: z.number().int().min(1).default(604800),
        /** PEM files of the SP signing key and certificate; unset = a pair generated once and kept in the database. */
        key_file: z.string().min(1).nullable().default(null),
        cert_file: z.string().min(1).nullable().default(null),
        /** Origins (`https://app.example.com`) redirect_url may point to; empty = any http(s) URL, as wazo-auth. */
        allowed_redirect_origins: z.array(z.string().url()).default([]),
        /** Clock difference tolerated on NotBefore / NotOnOrAfter. */
        accepted_clock_skew_seconds: z.number().int().min(0).max(600).default(60),
      })
      .prefault({}),
    /** OpenID Connect provider (docs/openid-connect.md "OpenID Connect"); its issuer is `{public_url}/0.1/oidc`. */
    oidc: z
      .object({
        /** Algorithm of ID tokens for clients that do not choose one (ES256 or RS256; never `none`). */
        default_signing_alg: z.enum(["ES256", "RS256"]).default("ES256"),
        /**
         * Secret (≥ 32 characters) from which the key encrypting the stored private signing keys is
         * derived (AES-256-GCM); unset, they are stored unencrypted (and still never returned).
         */
        key_encryption_key: z.string().min(32).nullable().default(null),
        /** Signing keys older than this are replaced (checked hourly); 0 = only by `tessera rotate-oidc-keys`. */
        key_rotation_days: z.number().int().min(0).max(3650).default(90),
      })
      .prefault({}),
    /**
     * Multi-factor authentication (docs/security.md "Multi-factor authentication"). TOTP secrets are encrypted
     * with AES-256-GCM under `encryption_keys` (base64 of 32 bytes, by id): the first encrypts, every
     * one decrypts, and a secret read under an older key is re-encrypted under the first at its next
     * accepted code. None configured: on PGlite a key is generated once in
     * `data_dir/mfa-encryption.key`; on PostgreSQL, MFA routes and MFA logins answer 503.
     */
    mfa: z
      .object({
        encryption_keys: z
          .array(z.object({ id: z.string().regex(/^[A-Za-z0-9_-]{1,32}$/), key: z.string().min(1) }))
          .default([]),
        /** `issuer` of the otpauth URI (what the authenticator app shows beside the account). */
        issuer: z.string().min(1).default("Tessera"),
        /** Give every login token of a `user` the self-service ACL `auth.users.me.mfa.#` through `default_user_policy`. */
        self_service: z.boolean().default(true),
      })
      .prefault({}),
    /** Prometheus `/metrics` on its own listener; off while `port` is null. */
    metrics: z
      .object({
        listen: z.string().min(1).default("127.0.0.1"),
        port: z.coerce.number().int().min(0).max(65535).nullable().default(null),
      })
      .prefault({}),
  })
  .loose();

export type Config = z.infer<typeof configSchema>;

const projectRoot = fileURLToPath(new URL("..", import.meta.url));

/** The stock plugins, used when the config file lists none of a kind (absolute paths). */
export const defaultPlugins: Record<string, Record<string, string | { module: string; priority: number }>> = {
  backends: {
    wazo_user: join(projectRoot, "plugins/backends/wazo-user.ts"),
    ldap_user: join(projectRoot, "plugins/backends/ldap-user.ts"),
  },
  // wazo-auth's priorities (COMPATIBILITY.md §14): saml 1, ldap 2.
  idp: {
    saml: { module: join(projectRoot, "plugins/idp/saml.ts"), priority: 1 },
    ldap: { module: join(projectRoot, "plugins/idp/ldap.ts"), priority: 2 },
  },
  external_auth: {
    google: join(projectRoot, "plugins/external-auth/google.ts"),
    microsoft: join(projectRoot, "plugins/external-auth/microsoft.ts"),
    mobile: join(projectRoot, "plugins/external-auth/mobile.ts"),
  },
  email_notification: { smtp: join(projectRoot, "plugins/email/smtp.ts") },
};

export class ConfigError extends Error {}

/** Which file to read: explicit path, then TESSERA_CONFIG, then ./config.yml if present. */
export function resolveConfigPath(argv: string[], env: NodeJS.ProcessEnv): string | null {
  const i = argv.indexOf("--config");
  if (i >= 0) {
    const path = argv[i + 1];
    if (!path) throw new ConfigError("--config needs a file path");
    return path;
  }
  if (env.TESSERA_CONFIG) return env.TESSERA_CONFIG;
  return existsSync("./config.yml") ? "./config.yml" : null;
}

export function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError(`cannot read config file ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (e) {
    throw new ConfigError(`config file ${path} is not valid YAML: ${(e as Error).message}`);
  }
  if (typeof raw !== "object" || Array.isArray(raw)) throw new ConfigError(`config file ${path} must be a mapping`);
  return raw as Record<string, unknown>;
}

/** Environment overrides, applied on top of the file. */
export function applyEnv(raw: Record<string, unknown>, env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = { ...raw };
  const restApi = { ...((raw.rest_api as Record<string, unknown>) ?? {}) };
  if (env.DATABASE_URL) out.db_uri = env.DATABASE_URL;
  if (env.TESSERA_LISTEN) restApi.listen = env.TESSERA_LISTEN;
  if (env.TESSERA_PORT) restApi.port = env.TESSERA_PORT;
  if (env.TESSERA_DATA_DIR) out.data_dir = env.TESSERA_DATA_DIR;
  if (env.TESSERA_LOG_LEVEL) out.log_level = env.TESSERA_LOG_LEVEL;
  if (env.XIVO_UUID && out.uuid == null) out.uuid = env.XIVO_UUID;
  if (env.TESSERA_METRICS_PORT)
    out.metrics = { ...((raw.metrics as Record<string, unknown>) ?? {}), port: env.TESSERA_METRICS_PORT };
  out.rest_api = restApi;
  return out;
}

/**
 * Validates a raw config; the error names each bad key and its problem. `strict` (the file read at
 * start) also refuses unknown keys, each named with the closest known one (config-keys.ts).
 */
export function parseConfig(raw: unknown, opts: { strict?: boolean } = {}): Config {
  const result = configSchema.safeParse(raw);
  const unknown =
    opts.strict && typeof raw === "object" && raw !== null
      ? unknownKeyProblems(raw as Record<string, unknown>, configSchema)
      : [];
  const invalid = result.success ? [] : result.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
  const problems = [...unknown, ...invalid];
  if (problems.length > 0 || !result.success)
    throw new ConfigError(`invalid configuration:\n  ${problems.join("\n  ")}`);
  return result.data;
}

/** The configuration of this process, and the file it came from (null: defaults and environment). */
export function loadConfigWithSource(
  argv: string[] = process.argv,
  env: NodeJS.ProcessEnv = process.env,
): { config: Config; path: string | null } {
  const path = resolveConfigPath(argv, env);
  const raw = path ? readConfigFile(path) : {};
  return { config: parseConfig(applyEnv(raw, env), { strict: true }), path };
}

export function loadConfig(argv: string[] = process.argv, env: NodeJS.ProcessEnv = process.env): Config {
  return loadConfigWithSource(argv, env).config;
}

/** A copy of the config safe to show (D12): see secrets.ts. */
export { maskSecrets } from "./secrets.ts";
