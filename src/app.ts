// The composition root: middleware order and route mounting, nothing else.
import { type Context, Hono } from "hono";
import { cors } from "hono/cors";
import type { AppContext } from "./boot/context.ts";
import { ApiError } from "./domain/errors.ts";
import { errorResponse, jsonError, resourceOfPath } from "./http/error-response.ts";
import { acceptedHostGuard } from "./http/accepted-host.ts";
import { asAnswered, type Door, type Env, type RouteGroup, type RouteSpec } from "./http/route.ts";
import { doorLookup } from "./http/doors.ts";
import { oauthErrorResponse } from "./http/oauth-error-response.ts";
import { pageErrorResponse } from "./web/pages/browser.ts";
import { scimErrorResponse } from "./scim/error-response.ts";
import { requestLimits } from "./http/limits.ts";
import { requestLog } from "./http/request-log.ts";
import { fastTokenCheck, type PeerSource, type Router } from "./http/fast-token-check.ts";
import { requestDeadline } from "./http/deadline.ts";
import { requestMetrics } from "./observe/metrics.ts";
import { statusRoutes } from "./api/status.ts";
import { backupRoutes } from "./api/backup.ts";
import { readyRoutes } from "./api/ready.ts";
import { configRoutes } from "./api/config.ts";
import { tokenRoutes } from "./api/tokens.ts";
import { loginRoutes } from "./api/login.ts";
import { refreshTokenRoutes } from "./api/refresh-tokens.ts";
import { sessionRoutes } from "./api/sessions.ts";
import { auditRoutes } from "./api/audit.ts";
import { idpRoutes } from "./api/idp.ts";
import { backendRoutes } from "./api/backends.ts";
import { ldapConfigRoutes } from "./api/ldap-config.ts";
import { samlConfigRoutes } from "./api/saml-config.ts";
import { backendsOidcRoutes } from "./api/backends-oidc.ts";
import { samlRoutes } from "./api/saml.ts";
import { passwordResetRoutes } from "./api/password-reset.ts";
import { registerRoutes } from "./api/register.ts";
import { emailRoutes } from "./api/emails.ts";
import { userLinkRoutes } from "./api/user-links.ts";
import { externalRoutes } from "./api/external.ts";
import { userRoutes } from "./api/users.ts";
import { mfaRoutes } from "./api/mfa.ts";
import { passkeyRoutes } from "./api/passkeys.ts";
import { tenantRoutes } from "./api/tenants.ts";
import { groupRoutes } from "./api/groups.ts";
import { policyRoutes } from "./api/policies.ts";
import { apiRoutes } from "./api/openapi.ts";
import { oidcRoutes } from "./oauth/discovery.ts";
import { oidcResourceRoutes } from "./api/oidc-resources.ts";
import { oidcClientRoutes } from "./api/oidc-clients.ts";
import { oidcInitialAccessTokenRoutes } from "./api/oidc-initial-access-tokens.ts";
import { webhookRoutes } from "./api/webhooks.ts";
import { oidcAuthorizeRoutes } from "./web/authorize.ts";
import { upstreamSignInRoutes } from "./web/upstream-sign-in.ts";
import { upstreamLogoutRoutes } from "./web/upstream-logout.ts";
import { upstreamBackchannelRoutes } from "./oauth/upstream-backchannel.ts";
import { mfaStepRoutes } from "./web/second-step.ts";
import { passkeySignInRoutes } from "./web/passkey-sign-in.ts";
import { accountRoutes } from "./web/account.ts";
import { selfServiceRoutes } from "./web/self-service.ts";
import { brandingRoutes } from "./api/branding.ts";
import { oidcTokenRoutes } from "./oauth/token.ts";
import { oidcRegistrationRoutes } from "./oauth/registration.ts";
import { consoleRoutes } from "./web/console.ts";
import { CONSOLE_PATH } from "./services/console/client.ts";
import { oidcLogoutRoutes } from "./web/logout.ts";
import { oidcDeviceRoutes } from "./web/device.ts";
import { fastIntrospection } from "./http/fast-introspection.ts";
import { renderPage } from "./web/pages/oidc-login.ts";
import { fastJwks } from "./http/fast-jwks.ts";
import { scimTokenRoutes, userDirectoryRoutes } from "./api/scim-tokens.ts";
import { scimBulkRoutes } from "./scim/bulk.ts";
import { scimDiscoveryRoutes } from "./scim/discovery.ts";
import { scimGroupRoutes } from "./scim/groups.ts";
import { scimMeRoutes } from "./scim/me.ts";
import { scimUserRoutes } from "./scim/users.ts";

/**
 * Every route group, in mounting order: the first route that matches a path wins, so groups with
 * literal segments (`/users/me/...`, `/users/password/reset`) come before `/users/{user_uuid}`. The
 * four doors (api/, oauth/, web/, scim/) interleave here only where that order requires or always was.
 */
export function routeGroups(app: AppContext): RouteGroup[] {
  return [
    // api/: the wazo-auth REST API (JSON, ACLs, Wazo-Tenant)
    statusRoutes(),
    backupRoutes(),
    readyRoutes(),
    configRoutes(),
    loginRoutes(),
    tokenRoutes(),
    refreshTokenRoutes(),
    sessionRoutes(),
    auditRoutes(),
    idpRoutes(),
    backendRoutes(),
    ldapConfigRoutes(),
    samlConfigRoutes(),
    backendsOidcRoutes(),
    samlRoutes(),
    passwordResetRoutes(),
    registerRoutes(),
    emailRoutes(),
    userLinkRoutes(),
    externalRoutes(app),
    mfaRoutes(),
    passkeyRoutes(),
    userRoutes(),
    tenantRoutes(),
    brandingRoutes(),
    groupRoutes(),
    policyRoutes(),
    oidcRoutes(), // oauth/: discovery and keys
    oidcClientRoutes(), // api/: the clients' administration
    oidcResourceRoutes(), // api/: the resource servers' administration
    oidcInitialAccessTokenRoutes(), // api/: initial access tokens (RFC 7591 §3)
    webhookRoutes(),
    // web/: the hosted pages and the browser sign-in flow
    oidcAuthorizeRoutes(),
    upstreamSignInRoutes(),
    mfaStepRoutes(),
    passkeySignInRoutes(),
    accountRoutes(),
    selfServiceRoutes(), // web/: the mailed links' pages (password reset, email confirmation)
    oidcTokenRoutes(), // oauth/: token, device authorization, introspection, revocation, userinfo
    oidcRegistrationRoutes(), // oauth/: client registration (RFC 7591/7592), pushed requests (RFC 9126)
    // web/
    oidcLogoutRoutes(),
    upstreamLogoutRoutes(),
    upstreamBackchannelRoutes(), // oauth/: upstream providers' logout tokens
    oidcDeviceRoutes(),
    scimTokenRoutes(), // api/: the SCIM tokens' administration, and which users a directory manages
    userDirectoryRoutes(),
    // scim/: the SCIM 2.0 service provider (RFC 7644)
    scimDiscoveryRoutes(),
    scimUserRoutes(),
    scimGroupRoutes(),
    scimBulkRoutes(),
    scimMeRoutes(),
  ];
}

export function createApp(app: AppContext): Hono<Env> {
  const hono = new Hono<Env>({ strict: false });
  const groups = routeGroups(app);
  const specs: RouteSpec[] = groups
    .flatMap((g) => g.specs)
    .map((s) => asAnswered(s, app.config.compatibility.put_responses));

  if (app.config.metrics.port !== null) hono.use("*", requestMetrics());
  hono.use("*", requestLog(app));
  hono.use("*", requestLimits());
  if (app.config.rest_api.cors.enabled) {
    const corsMiddleware = cors({ origin: (origin) => origin, allowHeaders: app.config.rest_api.cors.allow_headers });
    // Only browsers send Origin; daemons checking tokens skip the CORS work entirely.
    hono.use("*", (c, next) => (c.req.header("Origin") ? corsMiddleware(c, next) : next()));
  }
  hono.use("*", async (c, next) => {
    c.set("app", app);
    await next();
  });
  hono.use("*", requestDeadline(app).middleware());
  hono.use(
    "*",
    acceptedHostGuard(app, (message, status) => renderPage(app, { step: "error", message }, status)),
  );

  for (const group of groups) hono.route("/0.1", group.hono);
  hono.route("/0.1", apiRoutes(specs).hono);
  if (app.config.console.enabled) hono.route(CONSOLE_PATH, consoleRoutes());

  const doorOf = doorLookup(specs);
  hono.notFound((c) => {
    const allowed = specs.some((s) => matchesPath(s.path, c.req.path));
    const err = allowed
      ? new ApiError(
          405,
          "method-not-allowed",
          "The method is not allowed for the requested URL.",
          resourceOfPath(c.req.path),
        )
      : new ApiError(404, "not-found", "The requested URL was not found on the server.", resourceOfPath(c.req.path));
    // Under the SCIM service provider's base, its clients read RFC 7644's error body (http/doors.ts).
    if (doorOf(c.req.method, c.req.path) === "scim") return scimErrorResponse(c, err, app);
    return jsonError(c, err);
  });
  // Each door answers its errors in its own form, the deadline's 503 included (http/doors.ts).
  hono.onError((err, c) => ERROR_ANSWERS[doorOf(c.req.method, c.req.path)](c, err, app));
  return hono;
}

const ERROR_ANSWERS: Record<Door, (c: Context, err: unknown, app: AppContext) => Response> = {
  api: (c, err, app) => errorResponse(c, err, app.log),
  oauth: oauthErrorResponse,
  page: pageErrorResponse,
  scim: scimErrorResponse,
};

/** What the server calls for each request: the token check's in-memory shortcut, else the router. */
export type RequestHandler = (req: Request, peers: PeerSource) => Response | Promise<Response>;

/** The router's bindings: the peer address, looked up when read (logging, logins). */
class RequestEnv {
  constructor(
    private readonly req: Request,
    private readonly peers: PeerSource,
  ) {}
  get remoteAddr(): string {
    return this.peers.requestIP(this.req)?.address ?? "";
  }
}

export function createHandler(app: AppContext, hono: Hono<Env> = createApp(app)): RequestHandler {
  const route: Router = (req, peers) => {
    const alias = wellKnownAlias(req);
    return hono.fetch(alias ?? req, new RequestEnv(alias ?? req, peers));
  };
  const jwks: Router = (req, peers) => fastJwks(app, req, peers, route);
  const introspect: Router = (req, peers) => fastIntrospection(app, req, peers, jwks);
  return (req, peers) => fastTokenCheck(app, req, peers, introspect);
}

/**
 * Root well-known addresses answered by a declared route: RFC 9728 §3.1's of `/0.1`'s metadata, and
 * RFC 8414 §3.1's of the issuer `/0.1/oidc` (the provider metadata, which MCP clients look for there).
 */
const WELL_KNOWN_ALIASES: Record<string, string> = {
  "/.well-known/oauth-protected-resource": "/0.1/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/0.1": "/0.1/.well-known/oauth-protected-resource",
  "/.well-known/oauth-authorization-server/0.1/oidc": "/0.1/oidc/.well-known/openid-configuration",
};
function wellKnownAlias(req: Request): Request | null {
  if (!req.url.includes("/.well-known/oauth-")) return null;
  const url = new URL(req.url);
  const target = WELL_KNOWN_ALIASES[url.pathname];
  if (!target) return null;
  url.pathname = target;
  return new Request(url, req);
}

function matchesPath(template: string, path: string): boolean {
  const re = new RegExp(`^/0\\.1${template.replace(/[.]/g, "\\.").replace(/\{\w+\}/g, "[^/]+")}/?$`);
  return re.test(path);
}
