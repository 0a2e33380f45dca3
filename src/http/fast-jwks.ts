// The JWK Set (`GET /0.1/oidc/jwks`, RFC 7517 §5), which every relying party fetches to verify ID
// tokens, answered before the router from the copy in memory (services/oidc/keys.ts cachedJwks:
// read once per change, dropped on every instance by a rotation's notice). Anything else — a query,
// CORS, a copy not in memory — goes through the route in oauth/discovery.ts, which answers with the same
// `jwksResponse` and fills the copy. Both send a strong entity tag and answer 304 to a matching
// If-None-Match (RFC 9110 §13.1.2), so a relying party revalidating its copy gets no body.
import type { AppContext } from "../boot/context.ts";
import { httpRequests } from "../observe/metrics.ts";
import { cachedJwks, type JwksDocument } from "../services/oidc/keys.ts";
import type { PeerSource, Router } from "./fast-token-check.ts";
import { accessLogged, writeAccessLine } from "./request-log.ts";
import { clientAddress } from "./request-origin.ts";

const PATH = "/0.1/oidc/jwks";
/** Relying parties may keep the set this long (they fetch it again on an unknown `kid` anyway). */
const CACHE_CONTROL = "public, max-age=300";

/** Whether If-None-Match names `etag` (RFC 9110 §13.1.2: `*`, or a list compared weakly). */
export function ifNoneMatchHits(header: string | null, etag: string): boolean {
  if (header === null) return false;
  if (header.trim() === "*") return true;
  for (const tag of header.split(",")) {
    const t = tag.trim();
    if ((t.startsWith("W/") ? t.slice(2) : t) === etag) return true;
  }
  return false;
}

/** The answer for `doc`: 200 with the set, or 304 (RFC 9110 §15.4.5: with its ETag and Cache-Control). */
export function jwksResponse(doc: JwksDocument, ifNoneMatch: string | null): Response {
  return ifNoneMatchHits(ifNoneMatch, doc.etag)
    ? new Response(null, { status: 304, headers: { ETag: doc.etag, "Cache-Control": CACHE_CONTROL } })
    : new Response(doc.body, {
        status: 200,
        headers: { "Content-Type": "application/json", ETag: doc.etag, "Cache-Control": CACHE_CONTROL },
      });
}

const observed = { 200: "200", 304: "304" } as const;

export function fastJwks(
  app: AppContext,
  req: Request,
  peers: PeerSource,
  router: Router,
): Response | Promise<Response> {
  if (req.method !== "GET") return router(req, peers);
  const url = req.url;
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  if (pathStart < 0 || url.length !== pathStart + PATH.length || !url.endsWith(PATH) || req.headers.has("origin"))
    return router(req, peers);
  const doc = cachedJwks(app);
  if (!doc) return router(req, peers);
  const started = performance.now();
  const answer = jwksResponse(doc, req.headers.get("if-none-match"));
  const status = answer.status as 200 | 304;
  const duration = performance.now() - started;
  // Counted and logged as the route's middleware would.
  if (app.config.metrics.port !== null)
    httpRequests.cell({ method: "GET", route: PATH, status_code: observed[status] }).observe(duration / 1000);
  if (accessLogged(app, status, duration)) {
    const forwarded = app.config.rest_api.trusted_proxies.length ? req.headers.get("x-forwarded-for") : null;
    const address = clientAddress(app.config.rest_api.trusted_proxies, peers.requestIP(req)?.address ?? "", forwarded);
    writeAccessLine(app, "GET", `"${PATH}"`, status, duration, address);
  }
  return answer;
}
