// The hot path of a whole platform, `HEAD /0.1/token/{token}?scope=…&tenant=…`, answered before the
// router when the answer is a plain 204 that needs nothing but memory: the token is in the cache
// and unexpired, its ACL grants the scope, and its user's tenant and the tenant tree are already
// known. A token that is not in the cache is answered here too when it does not exist — told by
// memory (services/auth/tokens.ts knownAbsent) or by one lookup — so that a flood of made-up tokens costs
// no routing: a bare 404, as the route answers HEAD. Every other case (refusal, unusual query, CORS,
// anything to validate) goes through the full route in api/tokens.ts, which stays the one
// definition of the behaviour: this shortcut only ever answers what that route would answer.
import type { AppContext } from "../boot/context.ts";
import {
  canonicalTokenId,
  findValidToken,
  INTERNAL_AUTH_ID,
  isTokenShaped,
  knownAbsent,
} from "../services/auth/tokens.ts";
import { type ResolvedJwt, resolvedJwtNow } from "../services/oidc/access-jwt.ts";
import { CAPS } from "../domain/strings.ts";
import { maskToken } from "../observe/log.ts";
import { accessLogged, writeAccessLine } from "./request-log.ts";
import { clientAddress } from "./request-origin.ts";
import { requestDeadline } from "./deadline.ts";
import { recordFastTokenCheck, recordTokenCacheLookup } from "../observe/metrics.ts";

const PREFIX = "/0.1/token/";
const TOKEN_LENGTH = 36;

/** Where a request's peer address is found (Bun's server); looked up only when a log line needs it. */
export interface PeerSource {
  requestIP(req: Request): { address: string } | null;
}

/** The full route, for whatever the shortcut does not answer. */
export type Router = (req: Request, peers: PeerSource) => Response | Promise<Response>;

// Nothing here allocates a closure per request: the flood path and the 204 path allocate only the
// strings they slice and the Response.
export function fastTokenCheck(
  app: AppContext,
  req: Request,
  peers: PeerSource,
  router: Router,
): Response | Promise<Response> {
  return shortcut(app, req, peers, router) ?? router(req, peers);
}

function shortcut(
  app: AppContext,
  req: Request,
  peers: PeerSource,
  router: Router,
): Response | Promise<Response> | null {
  if (req.method !== "HEAD") return null;
  const started = performance.now();
  const url = req.url;
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  if (pathStart < 0 || !url.startsWith(PREFIX, pathStart)) return null;
  const tokenStart = pathStart + PREFIX.length;
  let tokenEnd = tokenStart + TOKEN_LENGTH;
  // An RFC 9068 JWT (`eyJ`: never in a UUID) already verified here: checked as the token it stands for.
  let jwt: ResolvedJwt | undefined;
  if (url.startsWith("eyJ", tokenStart)) {
    const q = url.indexOf("?", tokenStart);
    tokenEnd = q < 0 ? url.length : q;
    jwt = resolvedJwtNow(app, url.slice(tokenStart, tokenEnd));
    if (!jwt?.matcher) return null;
  } else if (url.length > tokenEnd && url[tokenEnd] !== "?") return null;
  // An upper-case token is the same token (the route lower-cases it): answered here as well.
  const uuid = jwt ? jwt.anchorUuid : canonicalTokenId(url.slice(tokenStart, tokenEnd));
  const query = url.length > tokenEnd + 1 ? parseQuery(url.slice(tokenEnd + 1)) : NO_QUERY;
  if (!query) return null;
  // CORS headers are the router's business. Reading one header makes Bun build the request's whole
  // `Headers` (a fifth of the check's time in a CPU profile): only when CORS is on (the default).
  if (app.config.rest_api.cors.enabled && req.headers.has("origin")) return null;

  // A cached token's id is token-shaped (the cache holds nothing else): the shape's regular
  // expression runs only for a miss.
  const tok = app.tokenCache.get(uuid);
  if (!tok && jwt) return null;
  if (!tok) {
    if (!isTokenShaped(uuid)) return null;
    if (knownAbsent(app, uuid)) {
      recordTokenCacheLookup(false);
      return notFound(app, req, peers, started, uuid);
    }
    if (!app.tokenCache.isTrusted) return null; // every check reads the database: the route does it
    // One lookup (batched by the lookup gate), bounded by db_timeout from the arrival: 404 if the
    // database does not know the token either, else the full route, which now finds it cached. An
    // outage, a full gate or the deadline: the route's 503, within what is left of the bound.
    const deadline = requestDeadline(app);
    return deadline.bound(findValidToken(app, uuid), started).then(
      (found) => (found ? router(deadline.handOn(req, started), peers) : notFound(app, req, peers, started, uuid)),
      () => router(deadline.handOn(req, started), peers),
    );
  }
  if (tok.dpopJkt !== null) return null; // DPoP-bound (RFC 9449 §7): the route checks the proof
  if (Date.now() / 1000 > (jwt ? Math.min(tok.expireT, jwt.exp) : tok.expireT)) return null;
  if (query.scope !== undefined && !(jwt?.matcher ?? tok.matcher).matches(query.scope)) return null;
  if (query.tenant !== undefined && tok.authId !== INTERNAL_AUTH_ID) {
    const userTenant =
      typeof tok.metadata.uuid === "string"
        ? tok.userTenantUuid
        : ((tok.metadata.tenant_uuid as string | undefined) ?? null);
    if (!userTenant || app.tenantTree.isSubtenantNow(query.tenant, userTenant) !== true) return null;
  }
  const duration = performance.now() - started;
  recordFastTokenCheck(app, "valid", duration);
  logAccess(app, req, peers, 204, duration, jwt ? jwt.jwt : uuid);
  return new Response(null, { status: 204 });
}

/** The route's answer to `HEAD` for a token that does not exist: a bare 404, counted and logged as it would be. */
function notFound(app: AppContext, req: Request, peers: PeerSource, started: number, uuid: string): Response {
  const duration = performance.now() - started;
  recordFastTokenCheck(app, "invalid", duration);
  logAccess(app, req, peers, 404, duration, uuid);
  return new Response(null, { status: 404, headers: { "Content-Type": "application/json" } });
}

/** The line the request log would write for `HEAD /0.1/token/{uuid}`, its path masked as maskPath masks it. */
function logAccess(
  app: AppContext,
  req: Request,
  peers: PeerSource,
  status: number,
  duration: number,
  uuid: string,
): void {
  if (!accessLogged(app, status, duration)) return;
  const forwarded = app.config.rest_api.trusted_proxies.length ? req.headers.get("x-forwarded-for") : null;
  writeAccessLine(
    app,
    "HEAD",
    `"${PREFIX}${maskToken(uuid)}"`,
    status,
    duration,
    clientAddress(app.config.rest_api.trusted_proxies, peers.requestIP(req)?.address ?? "", forwarded),
  );
}

interface CheckQuery {
  scope?: string;
  tenant?: string;
}

const NO_QUERY: CheckQuery = {};

/**
 * Queries already parsed: a daemon asks with the same few scopes again and again, and the parse
 * (three scans, a split, slices) was a tenth of the check's time in a CPU profile. Short queries
 * only, and bounded, so that made-up queries cannot grow it; the parsed object is never changed.
 */
const parsedQueries = new Map<string, CheckQuery | null>();
const MEMO_QUERY_LENGTH = 256;
const MEMO_QUERIES = 1_024;

function parseQuery(qs: string): CheckQuery | null {
  if (qs.length > MEMO_QUERY_LENGTH) return parseQueryText(qs);
  const known = parsedQueries.get(qs);
  if (known !== undefined) return known;
  const parsed = parseQueryText(qs);
  if (parsedQueries.size >= MEMO_QUERIES) parsedQueries.clear();
  parsedQueries.set(qs, parsed);
  return parsed;
}

/**
 * `scope` and `tenant` when the query is plain: no percent-escapes, `+`, repeated keys or fragment
 * (null then, and the router parses it). Other keys are ignored, as the route's schema does.
 */
function parseQueryText(qs: string): CheckQuery | null {
  if (qs.includes("%") || qs.includes("+") || qs.includes("#")) return null;
  const out: CheckQuery = {};
  for (const pair of qs.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const key = eq < 0 ? pair : pair.slice(0, eq);
    const value = eq < 0 ? "" : pair.slice(eq + 1);
    if (key === "scope" || key === "tenant") {
      if (out[key] !== undefined || value.length > CAPS.queryValue) return null; // the route's 400s
      out[key] = value;
    }
  }
  return out;
}
