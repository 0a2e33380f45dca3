// Token introspection (RFC 7662), the resource servers' hot path, answered before the router for
// the plain case: `POST /0.1/oidc/introspect` with `client_secret_basic` and a form holding only
// `token` (and `token_type_hint`). It runs the same services as the route (client authentication,
// introspectToken), which answer from memory when the client, the token and its grant are cached;
// routing and schema validation are what it saves. Anything else — another content type, other
// fields, CORS, a refused client, an error or an outage — goes through the full route in
// oauth/token.ts with the same body, so this shortcut only ever answers what that route would.
import type { AppContext } from "../boot/context.ts";
import { isTokenShaped } from "../services/auth/tokens.ts";
import { issuerOf } from "../services/oidc/discovery.ts";
import { introspectionJson } from "../services/oidc/introspection.ts";
import { authenticateClient } from "../services/oidc/token-endpoint.ts";
import type { PeerSource, Router } from "./fast-token-check.ts";
import { accessLogged, writeAccessLine } from "./request-log.ts";
import { hostAccepted } from "./accepted-host.ts";
import { clientAddress, trustedScriptName } from "./request-origin.ts";
import { requestDeadline } from "./deadline.ts";

const PATH = "/0.1/oidc/introspect";
const MAX_BODY = 4_096;
/** RFC 7662 §2.2 answer headers (RFC 6749 §5.1 no-store); copied by each Response. */
const ANSWER_HEADERS = new Headers({ "Content-Type": "application/json", "Cache-Control": "no-store" });

export function fastIntrospection(
  app: AppContext,
  req: Request,
  peers: PeerSource,
  router: Router,
): Response | Promise<Response> {
  if (req.method !== "POST" || !isIntrospectPath(req.url)) return router(req, peers);
  const type = req.headers.get("content-type") ?? "";
  const authorization = req.headers.get("authorization");
  if (
    !type.startsWith("application/x-www-form-urlencoded") ||
    !authorization?.startsWith("Basic ") ||
    req.headers.has("origin") ||
    !hostAccepted(app, req.url) // the router refuses it (http/accepted-host.ts)
  )
    return router(req, peers);
  return answer(app, req, peers, router, authorization);
}

function isIntrospectPath(url: string): boolean {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  return pathStart >= 0 && url.length === pathStart + PATH.length && url.endsWith(PATH);
}

/** The request URL's origin; the last one is remembered (one URL parse per distinct scheme and Host). */
let lastPrefix = "";
let lastOrigin = "";
function originOf(url: string): string {
  const prefix = url.slice(0, url.length - PATH.length);
  if (prefix !== lastPrefix) {
    lastOrigin = new URL(url).origin;
    lastPrefix = prefix;
  }
  return lastOrigin;
}

async function answer(
  app: AppContext,
  req: Request,
  peers: PeerSource,
  router: Router,
  authorization: string,
): Promise<Response> {
  const started = performance.now();
  const deadline = requestDeadline(app); // db_timeout from the arrival, the route's included (a replay keeps it)
  const body = await req.text();
  const replay = () =>
    router(deadline.handOn(new Request(req.url, { method: "POST", headers: req.headers, body }), started), peers);
  if (body.length > MAX_BODY || body.includes("%00")) return replay();
  let token: string | undefined;
  let hint: string | undefined;
  // The common body, `token=<a Tessera token>`, needs no form decoding (its characters are plain).
  if (body.startsWith("token=") && isTokenShaped(body.slice(6))) token = body.slice(6);
  else
    for (const [k, v] of new URLSearchParams(body)) {
      if (k === "token" && token === undefined) token = v;
      else if (k === "token_type_hint" && hint === undefined) hint = v;
      else return replay(); // anything the route's parsing decides
    }
  if (!token) return replay();
  try {
    const peer = peers.requestIP(req)?.address ?? "";
    const json = await deadline.bound(introspect(app, req, peer, authorization, token, hint), started);
    if (json === null) return replay();
    const duration = performance.now() - started;
    if (accessLogged(app, 200, duration)) {
      const forwarded = app.config.rest_api.trusted_proxies.length ? req.headers.get("x-forwarded-for") : null;
      const address = clientAddress(app.config.rest_api.trusted_proxies, peer, forwarded);
      writeAccessLine(app, "POST", `"${PATH}"`, 200, duration, address);
    }
    return new Response(json, { status: 200, headers: ANSWER_HEADERS });
  } catch {
    return replay(); // a refused client, an outage, the deadline: the route's answer (401, 503) and its log
  }
}

/** The introspection answer, or null for a public client (the route refuses it). */
async function introspect(
  app: AppContext,
  req: Request,
  peer: string,
  authorization: string,
  token: string,
  hint: string | undefined,
): Promise<string | null> {
  const client = await authenticateClient(app, authorization, {});
  if (client.clientType === "public") return null;
  const origin = app.config.public_url ? "" : originOf(req.url); // unused with public_url
  const scriptName = app.config.public_url
    ? undefined
    : trustedScriptName(app.config.rest_api.trusted_proxies, peer, req.headers.get("x-script-name"));
  const issuer = issuerOf(app, origin, scriptName);
  return introspectionJson(app, client, token, issuer, hint);
}
