// Configuration: defaults ← YAML file (--config PATH, TESSERA_CONFIG, or ./config.yml) ← env.
// Key names are wazo-auth's (wazo-auth's configuration keys) wherever a key applies.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { isProxyEntry } from "../http/request-origin.ts";
import { checkKeys } from "./keys.ts";
import { type ConfigOrigins, noteEnvironment, readConfigFile, readConfigFiles } from "./files.ts";
import { ConfigError, resolveConfigPath } from "./path.ts";
import { parseCidr } from "../services/outbound/addresses.ts";

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

const templatePath = (name: string) => fileURLToPath(new URL(`../../templates/${name}`, import.meta.url));

// Every key carries its meaning in `.describe()`: docs/configuration.md's key reference is generated
// from this schema (`npm run docs:config`, checked by tests/ops/config-docs.test.ts), so it cannot drift.
export const configSchema = z
  .object({
    rest_api: z
      .object({
        listen: z.string().min(1).default("127.0.0.1").describe("address to listen on"),
        port: z.coerce.number().int().min(0).max(65535).default(9497).describe("port to listen on"),
        num_proxies: z
          .number()
          .int()
          .min(0)
          .default(0)
          .describe(
            "wazo-auth's key, accepted but trusting nothing by itself: `X-Forwarded-For` is believed only from `trusted_proxies` (a start-up warning when this is set without them)",
          ),
        trusted_proxies: z
          .array(z.string().refine(isProxyEntry, "an IP address or CIDR"))
          .default([])
          .describe(
            'socket peers (addresses or CIDRs) whose `X-Forwarded-For` and, without `public_url`, `X-Script-Name` (the issuer\'s path prefix) are believed; behind nginx on the same host (Wazo\'s layout) `["127.0.0.1", "::1"]` (see "Client address" in [Security](security.md))',
          ),
        cors: z
          .object({
            enabled: z.boolean().default(true).describe("answer CORS preflights and add CORS headers, for browsers"),
            allow_headers: z
              .array(z.string())
              .default(["Content-Type", "Authorization", "X-Auth-Token", "Wazo-Tenant", "Wazo-Session-Type"])
              .describe("request headers browsers may send (wazo-auth's list)"),
          })
          .default({
            enabled: true,
            allow_headers: ["Content-Type", "Authorization", "X-Auth-Token", "Wazo-Tenant", "Wazo-Session-Type"],
          }),
      })
      .prefault({}),
    db_uri: z
      .string()
      .min(1)
      .nullable()
      .default(null)
      .describe("`postgres://…`; none = the embedded database (PGlite) in `data_dir`"),
    db_pool_size: z.number().int().min(1).max(500).default(20).describe("PostgreSQL connections of the pool"),
    db_timeout: z
      .number()
      .min(0.1)
      .max(300)
      .default(5)
      .describe(
        "seconds a request waits for the database before a 503 (see [Operations](operations.md)); also the LISTEN heartbeat deadline and twice the status probe bound; closing the database at shutdown gets it + 5 s",
      ),
    token_check_staleness: z
      .number()
      .min(0)
      .max(300)
      .default(0)
      .describe(
        "seconds token checks may be answered from the cache while cache invalidation (LISTEN) is lost — a failover, restart or partition; a revocation made meanwhile may be missed that long; `0` = strict: checks read the database (503 while it is away). See [Scaling](scaling.md)",
      ),
    db_watchdog_seconds: z
      .number()
      .min(0)
      .max(3600)
      .default(30)
      .describe(
        "PGlite only: its thread not answering a heartbeat statement for this long stops the service (exit 1, see [Operations](operations.md)); `0`: off",
      ),
    shutdown_drain_seconds: z
      .number()
      .min(0)
      .max(60)
      .default(1)
      .describe("after SIGTERM: seconds of draining (answers say `Connection: close`) before the socket closes"),
    data_dir: z.string().min(1).default("./data").describe("where the embedded database (and its generated keys) live"),
    uuid: z.string().nullable().default(null).describe("the platform's uuid (`XIVO_UUID`): the `xivo_uuid` of tokens"),
    log_level: z
      .enum(["debug", "info", "warning", "error", "critical"])
      .default("info")
      .describe("secrets are always masked (see Logging below)"),
    debug: z
      .boolean()
      .default(false)
      .describe("`true` forces `log_level: debug` (switchable at run time with `PATCH /0.1/config`)"),
    access_log: z
      .boolean()
      .default(false)
      .describe(
        "`true`: one line per request, every token check included; `false`: only answers ≥ 400 and requests slower than 1 s",
      ),
    log_filename: z
      .string()
      .min(1)
      .nullable()
      .default(null)
      .describe("none = standard error; a path = appended to, reopened on `SIGHUP`"),
    workers: z
      .number()
      .int()
      .min(1)
      .max(256)
      .default(1)
      .describe("processes serving the port (PostgreSQL only; PGlite is single-process; see Scaling below)"),
    default_token_lifetime: z
      .number()
      .int()
      .min(1)
      .max(315360000)
      .default(7200)
      .describe("seconds a token lives when the login asks for no `expiration`"),
    token_cleanup_interval: z.number().min(0).default(60).describe("seconds between expired-token purges; `0`: off"),
    token_cleanup_batch_size: z.number().int().min(1).default(5000).describe("sessions deleted per purge statement"),
    outbox_retention_seconds: z
      .number()
      .int()
      .min(60)
      .default(86_400)
      .describe(
        "seconds an event stays in the outbox; older ones are deleted every `token_cleanup_interval`, except those a configured bus has not published yet ([Events](events.md))",
      ),
    max_user_concurrent_sessions: z
      .number()
      .int()
      .min(1)
      .default(100)
      .describe(
        "sessions per user (purposes `user`, `external_api`); a login past it is refused (429 `too-many-sessions`) or ends the oldest session, as `session_cap_policy` says",
      ),
    session_cap_policy: z
      .enum(["refuse", "end_oldest"])
      .default("refuse")
      .describe(
        "a login past `max_user_concurrent_sessions`: `refuse` it (wazo-auth's 429), or `end_oldest` session(s) to make room (Keycloak's choice)",
      ),
    password_hash_algorithm: z
      .enum(["argon2id", "pbkdf2_sha512"])
      .default("argon2id")
      .describe("new hashes: `argon2id`, or `pbkdf2_sha512` (wazo-auth's format: the rollback setting)"),
    password_hash_iterations: z
      .number()
      .int()
      .min(1)
      .default(250000)
      .describe("PBKDF2 cost of new hashes with `pbkdf2_sha512` (wazo-auth verifies only 250,000)"),
    password_hash_concurrency: z
      .number()
      .int()
      .min(0)
      .max(256)
      .default(0)
      .describe("password derivations run at once, each on its own low-priority thread; `0` = one per core"),
    password_hash_queue: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(128)
      .describe("derivations waiting for a thread; past that, logins (and password changes) get a 503 at once"),
    login_throttling: z
      .object({
        enabled: z
          .boolean()
          .default(true)
          .describe(
            "brute-force protection of `POST /0.1/token` and password-reset requests (see [Security](security.md))",
          ),
        max_failures: z
          .number()
          .int()
          .min(1)
          .default(30)
          .describe(
            "failed logins of one login name from one client address before that pair is locked (Keycloak: 30)",
          ),
        max_failures_per_login: z
          .number()
          .int()
          .min(1)
          .default(1000)
          .describe(
            "failed logins of one login name from all addresses before its attempts are slowed by `slowdown_seconds` (never locked: a clean address still logs in) and a pair locks at its first failure",
          ),
        max_second_factor_failures: z
          .number()
          .int()
          .min(1)
          .max(100)
          .default(100)
          .describe(
            "consecutive wrong second-factor codes (or passkey assertions) of one account, from all addresses, before its second factor is locked for `failure_reset_seconds` or until an administrator unlocks it (NIST SP 800-63B §5.2.2: at most 100)",
          ),
        slowdown_seconds: z.number().min(0).max(10).default(1).describe("wait of each attempt of a slowed login name"),
        max_failures_per_address: z
          .number()
          .int()
          .min(1)
          .default(100)
          .describe("failed logins from one client address (an IPv6 /64) before it is throttled"),
        wait_increment_seconds: z
          .number()
          .int()
          .min(1)
          .default(60)
          .describe("first wait once a threshold is reached; doubles with each further failure"),
        max_wait_seconds: z.number().int().min(1).default(900).describe("cap of the wait"),
        failure_reset_seconds: z
          .number()
          .int()
          .min(1)
          .default(43200)
          .describe("a counter is forgotten this long after its last failure (Keycloak: 12 h)"),
        exempt_addresses: z
          .array(z.string())
          .default(["127.0.0.1", "::1"])
          .describe("socket peers never throttled per address (their logins still are): local daemons"),
        password_reset_max_requests: z
          .number()
          .int()
          .min(1)
          .default(5)
          .describe("password-reset requests per login name before throttling"),
        password_reset_max_requests_per_address: z
          .number()
          .int()
          .min(1)
          .default(30)
          .describe("password-reset requests per client address before throttling"),
      })
      .prefault({}),
    argon2: z
      .object({
        memory_kib: z
          .number()
          .int()
          .min(8)
          .max(4_194_304)
          .default(19456)
          .describe("argon2id memory cost (OWASP's minimum; lower values start with a warning)"),
        time_cost: z.number().int().min(1).max(100).default(2).describe("argon2id passes"),
      })
      .prefault({}),
    password_policy: z
      .object({
        min_length: z
          .number()
          .int()
          .min(1)
          .max(64)
          .default(8)
          .describe(
            "shortest password accepted, in Unicode characters (NIST SP 800-63B: 8); tenants may raise it for their subtree; below 8 starts with a warning",
          ),
        common_passwords: z
          .boolean()
          .default(true)
          .describe(
            "refuse the commonly used and breached passwords of the list shipped with Tessera; `false` is for tests only (starts with a warning)",
          ),
      })
      .prefault({}),
    bootstrap_user_on_startup: z
      .boolean()
      .default(false)
      .describe("create the bootstrap administrator at start when it does not exist"),
    bootstrap_user_username: z.string().min(1).nullable().default(null).describe("its login name"),
    bootstrap_user_password: z.string().min(1).nullable().default(null).describe("its password"),
    bootstrap_user_purpose: z.enum(["user", "internal", "external_api"]).default("internal").describe("its purpose"),
    bootstrap_user_policy_slug: z
      .string()
      .min(1)
      .default("wazo_default_master_user_policy")
      .describe("the policy it gets"),
    default_user_policy: z
      .string()
      .nullable()
      .default(null)
      .describe("slug of the policy every user of purpose `user` gets (through its tenant's all-users group)"),
    backend_policies: z
      .record(z.string(), z.string())
      .default({})
      .describe("a policy slug per authentication backend, added to the tokens it issues"),
    default_policies: z
      .record(z.string(), policySpec)
      .default({})
      .describe("policies (`acl`, `description`, `shared`) created or updated at start"),
    all_users_policies: z
      .record(z.string(), z.boolean())
      .default({})
      .describe(
        "policies attached (`true`) or detached (`false`) to every tenant's all-users group at start (`tessera_user: true` gives every user the stock own-account policy)",
      ),
    tenant_default_groups: z
      .record(z.string(), z.object({ policies: z.record(z.string(), z.boolean()).default({}) }))
      .default({})
      .describe("groups every tenant gets, with their policies"),
    update_policy_on_startup: z.boolean().default(true).describe("synchronise the policies and groups above at start"),
    password_reset_expiration: z
      .number()
      .int()
      .min(1)
      .default(172800)
      .describe("seconds a mailed password-reset link stays valid"),
    email_confirmation_expiration: z
      .number()
      .int()
      .min(1)
      .default(172800)
      .describe("seconds a mailed confirmation link stays valid"),
    enabled_http_plugins: z
      .record(z.string(), z.boolean())
      .default({ user_registration: false })
      .describe("`user_registration: true` opens `POST /users/register`"),
    enabled_metadata_plugins: z
      .record(z.string(), z.boolean())
      .default({ default_user: true, default_internal: true, default_external_api: true })
      .describe("token metadata plugins in use"),
    purpose_metadata_mapping: z
      .object({
        user: z.array(z.string()).default([]).describe("metadata plugins of tokens of `user` users"),
        internal: z.array(z.string()).default([]).describe("metadata plugins of tokens of `internal` users"),
        external_api: z.array(z.string()).default([]).describe("metadata plugins of tokens of `external_api` users"),
      })
      .prefault({}),
    plugins: z
      .object({
        backends: pluginKind.describe(
          "authentication backends; none listed = the stock ones (see [Plugins](plugins.md))",
        ),
        idp: pluginKind.describe("identity-provider plugins; none listed = the stock ones (SAML, LDAP)"),
        external_auth: pluginKind.describe(
          "external-auth plugins; none listed = the stock ones (Google, Microsoft, mobile)",
        ),
        email_notification: pluginKind.describe("email delivery plugins; none listed = the stock one (SMTP)"),
        metadata: pluginKind.describe("token metadata plugins beside the stock ones"),
      })
      .prefault({}),
    email_notification_plugin: z.string().default("smtp").describe("the email delivery plugin in use"),
    ldap: z
      .object({
        tls_ca_file: z
          .string()
          .min(1)
          .nullable()
          .default(null)
          .describe(
            "PEM file of extra certificate authorities trusted for ldaps:// and STARTTLS (beside the system ones)",
          ),
        timeout: z
          .number()
          .positive()
          .max(60)
          .default(2)
          .describe("seconds: TCP connect, each LDAP operation, and the whole directory conversation of a login"),
      })
      .prefault({}),
    public_url: z
      .url({ protocol: /^https?$/ })
      .nullable()
      .default(null)
      .describe(
        "public base URL of the API (`https://auth.example.com/api/auth`): the links of mails and the OpenID Connect issuer; unset, no reset or confirmation mail is sent (503): the link would come from the forgeable Host header, and the issuer's path prefix comes from `X-Script-Name` of a `rest_api.trusted_proxies` peer only (see [Security](security.md))",
      ),
    accepted_hosts: z
      .array(z.string().min(1))
      .default([])
      .describe(
        "without `public_url`: host names (`name` or `name:port`) the OpenID provider, hosted pages and console answer for, besides the listener's own address and loopback names; any other Host gets 421 (see [Security](security.md))",
      ),
    oauth2_redirect_base_url: z
      .string()
      .url()
      .nullable()
      .default(null)
      .describe(
        "public URL for the OAuth2 redirects of external-auth plugins; unset: `public_url`, else the listener (`http://{listen}:{port}`, 127.0.0.1 for a wildcard address)",
      ),
    smtp: z
      .object({
        hostname: z.string().min(1).default("localhost").describe("SMTP server"),
        port: z.number().int().min(1).max(65535).default(25).describe("SMTP port"),
        tls: z.boolean().default(false).describe("implicit TLS (SMTPS, usually port 465)"),
        starttls: z
          .boolean()
          .default(false)
          .describe("upgrade with STARTTLS when the server offers it; `true` requires it"),
        username: z.string().nullable().default(null).describe("SMTP login"),
        password: z.string().nullable().default(null).describe("SMTP password (masked everywhere)"),
        timeout: z.number().positive().default(4).describe("seconds"),
      })
      .prefault({}),
    outbound_http: z
      .object({
        allow_private_targets: z
          .array(
            z.string().refine((text) => {
              try {
                parseCidr(text);
                return true;
              } catch {
                return false;
              }
            }, "must be an address or a CIDR range"),
          )
          .default([])
          .describe(
            "address ranges (CIDR) that webhooks, logout URIs, clients' `jwks_uri` and upstream identity providers may reach although loopback, private or link-local; empty: none",
          ),
        allow_http: z.boolean().default(false).describe("let those URLs be plain `http:`; otherwise `https:` only"),
        timeout_ms: z.number().int().min(100).max(120_000).default(10_000).describe("deadline of one outbound call"),
        max_response_bytes: z
          .number()
          .int()
          .min(1024)
          .max(16 * 1024 * 1024)
          .default(1024 * 1024)
          .describe("longest answer read from such a URL"),
      })
      .prefault({}),
    secret_sealing: z
      .object({
        key_file: z
          .string()
          .min(1)
          .nullable()
          .default(null)
          .describe(
            "path of a file holding the base64 of 32 bytes: upstream identity providers' client secrets are sealed with it at rest (AES-256-GCM); values stored in clear before stay readable and are sealed when next set; null: stored as given",
          ),
      })
      .prefault({}),
    outbound_delivery: z
      .object({
        concurrency: z
          .number()
          .int()
          .min(1)
          .max(1000)
          .default(16)
          .describe("outbound deliveries (webhooks, back-channel logout) in flight at once, per instance"),
        per_owner_concurrency: z
          .number()
          .int()
          .min(1)
          .max(100)
          .default(4)
          .describe("of those, at most this many to one owner (a webhook, a client): a slow one never takes them all"),
        retry_initial_seconds: z
          .number()
          .positive()
          .default(5)
          .describe("first wait after a failed delivery; doubled at each failure, with jitter"),
        retry_max_interval_seconds: z
          .number()
          .positive()
          .default(3600)
          .describe("longest wait between two attempts of a delivery"),
        max_age_seconds: z
          .number()
          .positive()
          .default(86_400)
          .describe("a delivery still failing this long after it was recorded is given up"),
        retention_days: z
          .number()
          .positive()
          .default(7)
          .describe("finished deliveries (the webhooks' delivery log) are forgotten after this many days"),
        poll_seconds: z
          .number()
          .positive()
          .default(1)
          .describe("how often a worker looks for due deliveries when no notification woke it"),
      })
      .prefault({}),
    webhooks: z
      .object({
        secret_grace_seconds: z
          .number()
          .int()
          .min(0)
          .default(86_400)
          .describe("after a secret rotation, the previous secret also signs deliveries this long"),
        disable_after_failures: z
          .number()
          .int()
          .min(1)
          .default(50)
          .describe(
            "a webhook whose attempts failed this many times in a row (and for `disable_after_seconds`) is disabled",
          ),
        disable_after_seconds: z
          .number()
          .min(0)
          .default(86_400)
          .describe("how long a webhook's failure streak lasts before it is disabled (with `disable_after_failures`)"),
        max_per_tenant: z.number().int().min(1).default(50).describe("webhooks a tenant may have"),
      })
      .prefault({}),
    extra_config_files: z
      .string()
      .nullable()
      .default(null)
      .describe(
        "a directory whose `*.yml` files are merged over this file, as wazo-auth merges its `conf.d/`: in name order, the first file winning, lists accumulating (relative: from this file's directory; see “More files” above)",
      ),
    email_confirmation_from_name: z.string().default("wazo-auth").describe("sender name of confirmation mails"),
    email_confirmation_from_address: z
      .string()
      .nullable()
      .default(null)
      .describe(
        "sender address of confirmation mails; none: `noreply@` the host of `public_url` (wazo-auth: `noreply@wazo.community`)",
      ),
    email_confirmation_template: z
      .string()
      .default(templatePath("email_confirmation.jinja"))
      .describe("body of confirmation mails (nunjucks)"),
    email_confirmation_subject_template: z
      .string()
      .default(templatePath("email_confirmation_subject.jinja"))
      .describe("subject of confirmation mails"),
    email_confirmation_get_response_body_template: z
      .string()
      .default(templatePath("email_confirmation_get_body.jinja"))
      .describe("the page a confirmation link shows"),
    email_confirmation_get_mimetype: z.string().default("text/html").describe("its content type"),
    password_reset_from_name: z.string().default("wazo-auth").describe("sender name of password-reset mails"),
    password_reset_from_address: z
      .string()
      .nullable()
      .default(null)
      .describe(
        "sender address of password-reset mails; none: `noreply@` the host of `public_url` (wazo-auth: `noreply@wazo.community`)",
      ),
    password_reset_email_template: z
      .string()
      .default(templatePath("password_reset_email.jinja"))
      .describe(
        "body of password-reset mails; the default links to `{public_url}/0.1/pages/password-reset?token=…&user_uuid=…`; `templates/wazo-portal/password_reset_email.jinja` links to the Wazo portal as wazo-auth's does",
      ),
    password_reset_email_subject_template: z
      .string()
      .default(templatePath("password_reset_email_subject.jinja"))
      .describe("subject of password-reset mails"),
    amqp: z
      .object({
        uri: z.string().min(1).default("amqp://guest:guest@localhost:5672/").describe("the broker"),
        exchange_name: z.string().min(1).default("xivo").describe("exchange events are published to"),
        exchange_type: z.string().min(1).default("topic").describe("its type"),
        degraded_after_seconds: z
          .number()
          .min(1)
          .max(86_400)
          .default(60)
          .describe("`GET /0.1/status` says `bus_publisher: degraded` when the oldest unpublished event is older"),
      })
      .nullable()
      .default(null)
      .describe("the message bus (see [Events](events.md)); none = off, events stay in the outbox"),
    profiling_enabled: z.boolean().default(false).describe("accepted for wazo-auth's configuration; no effect"),
    compatibility: z
      .object({
        put_responses: z
          .enum(["empty", "wazo"])
          .default("empty")
          .describe(
            "`empty`: every PUT answers 204 with no body (D3); `wazo`: the PUTs wazo-auth answers with 200 and the resource do so, for wazo-auth-client code that parses their body",
          ),
        refresh_token_revocation: z
          .enum(["revoke", "keep"])
          .default("revoke")
          .describe(
            "`revoke`: a password change, reset or removal, or disabling a user, ends its refresh tokens with its sessions; `keep`: wazo-auth's older behaviour, only the sessions end (see [What differs](wazo-auth-differences.md))",
          ),
      })
      .prefault({}),
    saml: z
      .object({
        acs_url_template: z
          .string()
          .min(1)
          .default("https://{{STACK_URL}}/api/auth/0.1/saml/acs")
          .describe("shown by `GET /backends/saml/acs_url_template`: the ACS URL an administrator fills in"),
        saml_login_timeout_seconds: z
          .number()
          .int()
          .min(1)
          .default(600)
          .describe("how long the IdP login may take, from `POST /saml/sso` to the ACS post"),
        saml_session_lifetime_seconds: z
          .number()
          .int()
          .min(1)
          .default(604800)
          .describe("how long a SAML session (login, then logout context) is kept"),
        key_file: z
          .string()
          .min(1)
          .nullable()
          .default(null)
          .describe("PEM key signing AuthnRequests; none = a pair generated once and shared through the database"),
        cert_file: z.string().min(1).nullable().default(null).describe("its PEM certificate"),
        allowed_redirect_origins: z
          .array(z.string().url())
          .default([])
          .describe(
            "origins (`https://app.example.com`) `redirect_url` may point to; empty = any http(s) URL, as wazo-auth",
          ),
        accepted_clock_skew_seconds: z
          .number()
          .int()
          .min(0)
          .max(600)
          .default(60)
          .describe("tolerance on the assertion's NotBefore / NotOnOrAfter"),
      })
      .prefault({}),
    audit: z
      .object({
        retention_days: z
          .number()
          .int()
          .min(0)
          .max(36_500)
          .default(90)
          .describe(
            "audit entries older than this are deleted by the scheduler, in batches, every `token_cleanup_interval` ([Audit trail](audit.md)); `0` = kept forever",
          ),
      })
      .prefault({}),
    console: z
      .object({
        enabled: z
          .boolean()
          .default(true)
          .describe(
            "the administration console at `/0.1/console` ([Console](console.md)); `false`: its pages answer 404 and its OpenID Connect client (a public client of the top tenant) is removed",
          ),
      })
      .prefault({}),
    oidc: z
      .object({
        default_signing_alg: z
          .enum(["ES256", "RS256"])
          .default("ES256")
          .describe("algorithm of ID tokens for clients that do not choose one (never `none`)"),
        key_encryption_key: z
          .string()
          .min(32)
          .nullable()
          .default(null)
          .describe(
            "secret (≥ 32 characters) from which the key encrypting the stored private signing keys is derived (AES-256-GCM); unset, they are stored unencrypted (and still never returned)",
          ),
        key_rotation_days: z
          .number()
          .int()
          .min(0)
          .max(3650)
          .default(90)
          .describe(
            "signing keys older than this are replaced (checked hourly); `0` = only by `tessera rotate-oidc-keys`",
          ),
        browser_session_lifetime: z
          .number()
          .int()
          .min(60)
          .max(2_592_000)
          .default(43_200)
          .describe("seconds a browser stays signed in on the login page (single sign-on across clients)"),
        login_page_template: z
          .string()
          .default(templatePath("oidc_page.html"))
          .describe(
            'the login page\'s layout (nunjucks, autoescaped; see [OpenID Connect](openid-connect.md) "Templates")',
          ),
        tenant_login_page_templates: z
          .record(z.string().uuid(), z.string().min(1))
          .default({})
          .describe("a tenant's own layout file, by tenant uuid: the clients registered in that tenant show it"),
        default_locale: z
          .string()
          .regex(/^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/, "a BCP 47 language tag")
          .default("en")
          .describe(
            "language of the hosted pages and mails when neither the request, the user, the browser nor the tenant names one the catalogues have (see [Languages](languages.md))",
          ),
        tenant_default_locales: z
          .record(z.string().uuid(), z.string().regex(/^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/, "a BCP 47 language tag"))
          .default({})
          .describe(
            "a tenant's default language (BCP 47 tag), by tenant uuid: its users' pages and mails when nothing closer chooses one",
          ),
        refresh_token_lifetime: z
          .number()
          .int()
          .min(0)
          .max(2_147_483_647)
          .default(2_592_000)
          .describe("seconds an OIDC refresh token lives, for clients that set none; `0` = until revoked"),
        dpop_require_nonce: z
          .boolean()
          .default(false)
          .describe(
            "DPoP proofs (RFC 9449) at the token endpoint and userinfo must carry a nonce this server issued (§8: a proof without one is answered `use_dpop_nonce` with a `DPoP-Nonce` header; the nonce changes every 5 minutes, the previous one still accepted)",
          ),
        refresh_token_reuse_grace: z
          .number()
          .int()
          .min(0)
          .max(300)
          .default(10)
          .describe(
            "seconds after a public client's refresh token was rotated during which the same client presenting it again, while its successor is still unused, gets that successor instead of having the grant revoked (a retry after a lost answer, RFC 9700 §4.14.2); `0` = never",
          ),
        device_code_lifetime: z
          .number()
          .int()
          .min(60)
          .max(3_600)
          .default(600)
          .describe("seconds a device code and its user code stay valid (RFC 8628 §3.2 `expires_in`)"),
        device_poll_interval: z
          .number()
          .int()
          .min(1)
          .max(60)
          .default(5)
          .describe("seconds a device waits between polls (RFC 8628 §3.2 `interval`); each `slow_down` adds 5"),
      })
      .prefault({}),
    mfa: z
      .object({
        encryption_keys: z
          .array(z.object({ id: z.string().regex(/^[A-Za-z0-9_-]{1,32}$/), key: z.string().min(1) }))
          .default([])
          .describe(
            "`[{id, key}]`, key = base64 of 32 bytes: TOTP secrets are encrypted (AES-256-GCM) under the first, every one decrypts (rotation, see [Security](security.md#multi-factor-authentication)); none: on PGlite a key generated once in `data_dir/mfa-encryption.key`, on PostgreSQL MFA answers 503",
          ),
        issuer: z
          .string()
          .min(1)
          .default("Tessera")
          .describe("`issuer` of the otpauth URI (what the authenticator app shows beside the account)"),
        self_service: z
          .boolean()
          .default(true)
          .describe(
            "give every login token of a user of purpose `user` the self-service ACL `auth.users.me.mfa.#` (a removal still asks for a proof); the stock `tessera_user` policy carries it too",
          ),
      })
      .prefault({}),
    metrics: z
      .object({
        listen: z.string().min(1).default("127.0.0.1").describe("address of the Prometheus `/metrics` listener"),
        port: z.coerce
          .number()
          .int()
          .min(0)
          .max(65535)
          .nullable()
          .default(null)
          .describe("its port; none = off (see [Operations](operations.md))"),
      })
      .prefault({}),
  })
  .loose();

export type Config = z.infer<typeof configSchema>;

const projectRoot = fileURLToPath(new URL("../..", import.meta.url));

/** The stock plugins, used when the config file lists none of a kind (absolute paths). */
export const defaultPlugins: Record<string, Record<string, string | { module: string; priority: number }>> = {
  backends: {
    wazo_user: join(projectRoot, "plugins/backends/wazo-user.ts"),
    ldap_user: join(projectRoot, "plugins/backends/ldap-user.ts"),
  },
  // wazo-auth's priorities (wazo-auth's configuration keys): saml 1, ldap 2.
  idp: {
    saml: { module: join(projectRoot, "plugins/idp/saml.ts"), priority: 1 },
    ldap: { module: join(projectRoot, "plugins/idp/ldap.ts"), priority: 2 },
    // Tenants' upstream OpenID Connect providers (docs/federation.md).
    oidc: { module: join(projectRoot, "plugins/idp/oidc.ts"), priority: 3 },
  },
  external_auth: {
    google: join(projectRoot, "plugins/external-auth/google.ts"),
    microsoft: join(projectRoot, "plugins/external-auth/microsoft.ts"),
    mobile: join(projectRoot, "plugins/external-auth/mobile.ts"),
  },
  email_notification: { smtp: join(projectRoot, "plugins/email/smtp.ts") },
};

export { ConfigError, readConfigFile, resolveConfigPath };

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
      ? checkKeys(raw as Record<string, unknown>, configSchema).unknown
      : [];
  const invalid = result.success ? [] : result.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
  const problems = [...unknown, ...invalid];
  if (problems.length > 0 || !result.success)
    throw new ConfigError(`invalid configuration:\n  ${problems.join("\n  ")}`);
  return result.data;
}

/**
 * The configuration of this process; the main file it came from (null: defaults and environment),
 * every file read (extra_config_files, highest priority first), where each value came from, and the
 * warnings to log at start (wazo-auth's keys without use here, an unreadable extra directory).
 */
export function loadConfigWithSource(
  argv: string[] = process.argv,
  env: NodeJS.ProcessEnv = process.env,
): { config: Config; path: string | null; files: string[]; origins: ConfigOrigins; warnings: string[] } {
  const path = resolveConfigPath(argv, env);
  const read = path ? readConfigFiles(path) : { raw: {}, files: [], origins: new Map(), warnings: [] };
  const raw = applyEnv(read.raw, env);
  noteEnvironment(read.raw, raw, read.origins);
  const config = parseConfig(raw, { strict: true });
  const warnings = [...read.warnings, ...checkKeys(raw, configSchema).ignored];
  return { config, path, files: read.files, origins: read.origins, warnings };
}

export function loadConfig(argv: string[] = process.argv, env: NodeJS.ProcessEnv = process.env): Config {
  return loadConfigWithSource(argv, env).config;
}

/** A copy of the config safe to show (D12 of docs/wazo-auth-differences.md): see secrets.ts. */
export { maskSecrets } from "./secrets.ts";
