// The composition root: middleware order and route mounting, nothing else.
import { type Context, Hono } from "hono";
import { cors } from "hono/cors";
import type { AppContext } from "./context.ts";
import { ApiError } from "./domain/errors.ts";
import { errorResponse, jsonError, resourceOfPath } from "./http/error-response.ts";
import { acceptedHostGuard } from "./http/accepted-host.ts";
import { asAnswered, type Door, type Env, type RouteGroup, type RouteSpec } from "./http/route.ts";
import { doorLookup } from "./http/doors.ts";
import { oauthErrorResponse } from "./http/oauth-error-response.ts";
import { pageErrorResponse } from "./routes/oidc-pages.ts";
import { requestLimits } from "./http/limits.ts";
import { requestLog } from "./http/request-log.ts";
import { fastTokenCheck, type PeerSource, type Router } from "./http/fast-token-check.ts";
import { requestDeadline } from "./http/deadline.ts";
import { requestMetrics } from "./metrics.ts";
import { statusRoutes } from "./routes/status.ts";
import { backupRoutes } from "./routes/backup.ts";
import { readyRoutes } from "./routes/ready.ts";
import { configRoutes } from "./routes/config.ts";
import { tokenRoutes } from "./routes/tokens.ts";
import { loginRoutes } from "./routes/login.ts";
import { refreshTokenRoutes } from "./routes/refresh-tokens.ts";
import { sessionRoutes } from "./routes/sessions.ts";
import { auditRoutes } from "./routes/audit.ts";
import { idpRoutes } from "./routes/idp.ts";
import { backendRoutes } from "./routes/backends.ts";
import { ldapConfigRoutes } from "./routes/ldap-config.ts";
import { samlConfigRoutes } from "./routes/saml-config.ts";
import { samlRoutes } from "./routes/saml.ts";
import { passwordResetRoutes } from "./routes/password-reset.ts";
import { registerRoutes } from "./routes/register.ts";
import { emailRoutes } from "./routes/emails.ts";
import { userLinkRoutes } from "./routes/user-links.ts";
import { externalRoutes } from "./routes/external.ts";
import { userRoutes } from "./routes/users.ts";
import { mfaRoutes } from "./routes/mfa.ts";
import { passkeyRoutes } from "./routes/passkeys.ts";
import { tenantRoutes } from "./routes/tenants.ts";
import { groupRoutes } from "./routes/groups.ts";
import { policyRoutes } from "./routes/policies.ts";
import { apiRoutes } from "./routes/api.ts";
import { oidcRoutes } from "./routes/oidc.ts";
import { oidcClientRoutes } from "./routes/oidc-clients.ts";
import { oidcAuthorizeRoutes } from "./routes/oidc-authorize.ts";
import { mfaStepRoutes, secondStepPage } from "./routes/mfa-step.ts";
import { passkeySignInRoutes } from "./routes/passkey-sign-in.ts";
import { accountRoutes } from "./routes/account.ts";
import { oidcTokenRoutes } from "./routes/oidc-token.ts";
import { consoleRoutes } from "./routes/console.ts";
import { CONSOLE_PATH } from "./services/console/client.ts";
import { oidcLogoutRoutes } from "./routes/oidc-logout.ts";
import { oidcDeviceRoutes } from "./routes/oidc-device.ts";
import { fastIntrospection } from "./http/fast-introspection.ts";
import { fastJwks } from "./http/fast-jwks.ts";

/**
 * Every route group, in mounting order: the first route that matches a path wins, so groups with
 * literal segments (`/users/me/...`, `/users/password/reset`) come before `/users/{user_uuid}`.
 */
export function routeGroups(app: AppContext): RouteGroup[] {
  return [
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
    groupRoutes(),
    policyRoutes(),
    oidcRoutes(),
    oidcClientRoutes(),
    oidcAuthorizeRoutes({ secondStep: secondStepPage }),
    mfaStepRoutes(),
    passkeySignInRoutes(),
    accountRoutes(),
    oidcTokenRoutes(),
    oidcLogoutRoutes(),
    oidcDeviceRoutes(),
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
  hono.use("*", acceptedHostGuard(app));

  for (const group of groups) hono.route("/0.1", group.hono);
  hono.route("/0.1", apiRoutes(specs).hono);
  if (app.config.console.enabled) hono.route(CONSOLE_PATH, consoleRoutes());

  hono.notFound((c) => {
    const allowed = specs.some((s) => matchesPath(s.path, c.req.path));
    if (allowed)
      return jsonError(
        c,
        new ApiError(
          405,
          "method-not-allowed",
          "The method is not allowed for the requested URL.",
          resourceOfPath(c.req.path),
        ),
      );
    return jsonError(
      c,
      new ApiError(404, "not-found", "The requested URL was not found on the server.", resourceOfPath(c.req.path)),
    );
  });
  // Each door answers its errors in its own form, the deadline's 503 included (http/doors.ts).
  const doorOf = doorLookup(specs);
  hono.onError((err, c) => ERROR_ANSWERS[doorOf(c.req.method, c.req.path)](c, err, app));
  return hono;
}

const ERROR_ANSWERS: Record<Door, (c: Context, err: unknown, app: AppContext) => Response> = {
  api: (c, err, app) => errorResponse(c, err, app.log),
  oauth: oauthErrorResponse,
  page: pageErrorResponse,
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
  const route: Router = (req, peers) => hono.fetch(req, new RequestEnv(req, peers));
  const jwks: Router = (req, peers) => fastJwks(app, req, peers, route);
  const introspect: Router = (req, peers) => fastIntrospection(app, req, peers, jwks);
  return (req, peers) => fastTokenCheck(app, req, peers, introspect);
}

function matchesPath(template: string, path: string): boolean {
  const re = new RegExp(`^/0\\.1${template.replace(/[.]/g, "\\.").replace(/\{\w+\}/g, "[^/]+")}/?$`);
  return re.test(path);
}
