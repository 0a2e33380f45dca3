// Strict host names for the surfaces whose answers carry the issuer or links to the service (the
// OpenID provider, the hosted pages, the console), as Keycloak's strict hostname: without
// `public_url` the issuer would be built from the request's Host header, which anyone can forge
// (a poisoned cache or a phishing host would then get discovery documents, ID tokens and redirects
// naming it). So without `public_url` they answer only for the listener's own address, loopback
// names and the configured `accepted_hosts`; any other host gets 421 Misdirected Request (RFC 9110
// §15.5.20), never an issuer built from it. The wazo-auth REST API is not concerned: daemons check
// tokens through whatever name reaches the service, and it names no issuer.
import { networkInterfaces } from "node:os";
import { isIP } from "node:net";
import type { Context, MiddlewareHandler } from "hono";
import type { AppContext } from "../boot/context.ts";
import { ApiError } from "../domain/errors.ts";
import { CONSOLE_PATH } from "../services/console/client.ts";
import { jsonError } from "./error-response.ts";
import type { Env } from "./route.ts";

const OIDC_PREFIX = "/0.1/oidc/";
/** Protocol endpoints of the provider: their refusal is the JSON error body, the pages' a page. */
const PROTOCOL =
  /^\/0\.1\/(oidc\/(\.well-known\/|jwks|token|userinfo|introspect|revoke|device_authorization)|\.well-known\/)/;
/** The clients' and resource servers' administration (REST API with a token): no issuer in its answers. */
const CLIENT_ADMIN = /^\/0\.1\/oidc\/(clients|resources)(\/|$)/;

const WILDCARDS = new Set(["0.0.0.0", "::", "[::]", ""]);

/** A URL's host name (lower case, IPv6 without brackets) and port (the scheme's default when absent). */
function hostOf(url: URL): { name: string; port: number } {
  const name = url.hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  return { name, port: Number(url.port || (url.protocol === "https:" ? 443 : 80)) };
}

/** `localhost` and its subdomains (RFC 6761 §6.3), 127.0.0.0/8 and ::1. */
function isLoopback(name: string): boolean {
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  if (isIP(name) === 4) return name.startsWith("127.");
  return name === "::1";
}

/** The listener's own addresses: the one it binds, or every interface's for a wildcard bind. */
function listenerAddresses(listen: string): string[] {
  if (!WILDCARDS.has(listen)) return [listen.toLowerCase().replace(/^\[(.*)\]$/, "$1")];
  return Object.values(networkInterfaces())
    .flat()
    .map((i) => i?.address.toLowerCase() ?? "")
    .filter(Boolean);
}

/** An `accepted_hosts` entry: `name` (any port) or `name:port` (`[v6]:port` for IPv6). */
function matchesEntry(entry: string, host: { name: string; port: number }): boolean {
  const url = URL.parse(`http://${entry.trim()}`);
  if (!url) return false;
  const name = url.hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  return name === host.name && (url.port === "" || Number(url.port) === host.port);
}

/** True when the issuer may be built from this request URL (always, with `public_url`). */
export function hostAccepted(app: AppContext, requestUrl: string): boolean {
  const config = app.config;
  if (config.public_url) return true;
  const url = URL.parse(requestUrl);
  if (!url) return false;
  const host = hostOf(url);
  if (isLoopback(host.name)) return true;
  if (config.accepted_hosts.some((e) => matchesEntry(e, host))) return true;
  return host.port === config.rest_api.port && listenerAddresses(config.rest_api.listen).includes(host.name);
}

const isGuarded = (path: string) =>
  path === CONSOLE_PATH ||
  path.startsWith(`${CONSOLE_PATH}/`) ||
  (path.startsWith(OIDC_PREFIX) && !CLIENT_ADMIN.test(path)) ||
  // RFC 9728 metadata names the issuer too.
  path === "/0.1/.well-known/oauth-protected-resource";

const MESSAGE = (host: string) =>
  `This service does not answer for the host ${JSON.stringify(host)}: set public_url (or list the host in accepted_hosts) in its configuration`;

/**
 * Refuses the guarded surfaces for a host that is not accepted: JSON on protocol endpoints, a page on
 * the others (`errorPage`: the hosted pages' error step, which the composition root hands in, so this
 * layer imports no door).
 */
export function acceptedHostGuard(
  app: AppContext,
  errorPage: (message: string, status: number) => Response,
): MiddlewareHandler<Env> {
  return async (c: Context<Env>, next) => {
    if (app.config.public_url || !isGuarded(c.req.path) || hostAccepted(app, c.req.url)) return next();
    const message = MESSAGE(new URL(c.req.url).host);
    if (PROTOCOL.test(c.req.path)) return jsonError(c, new ApiError(421, "misdirected-request", message, "oidc"));
    return errorPage(message, 421);
  };
}
