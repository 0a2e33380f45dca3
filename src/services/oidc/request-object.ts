// Request objects (RFC 9101, OIDC Core §6.1): an authorization request sent as a JWT signed by the
// client. Processed only when the client registered the keys that sign it (`jwks`, or `jwks_uri`
// fetched through the outbound guard); otherwise refused with `request_not_supported`, never
// silently ignored. Encrypted request objects are not supported.
import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from "jose";
import type { AppContext } from "../../boot/context.ts";
import { OutboundRefused, outboundFetch, outboundPolicy } from "../outbound/fetch.ts";

/** Algorithms a request object may be signed with (RFC 9101 §10.1: never `none`, never a shared secret). */
export const REQUEST_OBJECT_ALGS = ["RS256", "PS256", "ES256", "EdDSA"] as const;

/** A request object refused: `error` is the authorization error code (RFC 9101 §6.3, OIDC Core §3.1.2.6). */
export class RequestObjectError extends Error {
  constructor(
    readonly error: "invalid_request_object" | "request_not_supported",
    readonly description: string,
  ) {
    super(description);
  }
}

/** What the check needs of a client (clients.ts's row). */
export interface RequestObjectClient {
  clientId: string;
  jwks: { keys: Record<string, unknown>[] } | null;
  jwksUri: string | null;
}

/** JWT claims of the object itself, not parameters of the request (RFC 9101 §4). */
const JWT_CLAIMS = new Set(["iss", "aud", "exp", "iat", "nbf", "jti"]);
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "k", "oth"];

/**
 * Why a registered `jwks` (RFC 7591 §2) cannot be kept, or null: a JWK Set of public RSA, EC or OKP
 * keys; a private member (or a symmetric key) would make Tessera hold the client's secret.
 */
export function jwksProblem(jwks: unknown): string | null {
  if (typeof jwks !== "object" || jwks === null || !Array.isArray((jwks as { keys?: unknown }).keys))
    return 'jwks must be a JWK Set: {"keys": [...]} (RFC 7517 §5)';
  const keys = (jwks as { keys: unknown[] }).keys;
  if (keys.length === 0 || keys.length > 16) return "jwks must hold between 1 and 16 keys";
  for (const key of keys) {
    if (typeof key !== "object" || key === null) return "every key of jwks must be a JWK object";
    const kty = (key as Record<string, unknown>).kty;
    if (kty !== "RSA" && kty !== "EC" && kty !== "OKP") return "keys of jwks must be RSA, EC or OKP public keys";
    if (PRIVATE_MEMBERS.some((m) => m in key)) return "jwks must hold public keys only (a private member was sent)";
  }
  if (JSON.stringify(jwks).length > 32_768) return "jwks is too large";
  return null;
}

const JWKS_CACHE_MS = 60_000;
const jwksCaches = new WeakMap<AppContext, Map<string, { keys: JSONWebKeySet; at: number }>>();

/** The client's `jwks_uri` set, through the outbound guard (the client chose the URL); kept a minute. */
async function fetchJwks(app: AppContext, uri: string, fresh: boolean): Promise<JSONWebKeySet> {
  const cache = jwksCaches.get(app) ?? jwksCaches.set(app, new Map()).get(app)!;
  const hit = cache.get(uri);
  if (!fresh && hit && Date.now() - hit.at < JWKS_CACHE_MS) return hit.keys;
  let body: string;
  try {
    const res = await outboundFetch(
      uri,
      { headers: { Accept: "application/jwk-set+json, application/json" } },
      outboundPolicy(app.config.outbound_http),
    );
    if (res.status !== 200) throw new OutboundRefused(`answered ${res.status}`);
    body = res.body;
  } catch (e) {
    if (!(e instanceof OutboundRefused)) throw e;
    throw new RequestObjectError("invalid_request_object", `the client's jwks_uri could not be read: ${e.message}`);
  }
  let keys: unknown;
  try {
    keys = JSON.parse(body);
  } catch {
    keys = null;
  }
  const problem = jwksProblem(keys);
  if (problem) throw new RequestObjectError("invalid_request_object", `the client's jwks_uri: ${problem}`);
  if (cache.size >= 1_000) cache.clear();
  cache.set(uri, { keys: keys as JSONWebKeySet, at: Date.now() });
  return keys as JSONWebKeySet;
}

async function verify(jwt: string, keys: JSONWebKeySet) {
  return jwtVerify(jwt, createLocalJWKSet(keys), { algorithms: [...REQUEST_OBJECT_ALGS], clockTolerance: 30 });
}

/**
 * The authorization request's parameters carried by `jwt`, once its signature is verified with the
 * client's keys. RFC 9101 §5: only the object's parameters are used (the caller keeps `client_id`);
 * `iss`, when present, is the client and `aud`, when present, names this provider (`issuer`).
 */
export async function requestObjectParams(
  app: AppContext,
  client: RequestObjectClient,
  jwt: string,
  issuer: string | undefined,
): Promise<Record<string, string>> {
  if (!client.jwks && !client.jwksUri)
    throw new RequestObjectError(
      "request_not_supported",
      "this client registered no keys (jwks or jwks_uri) to sign request objects with",
    );
  const parts = jwt.split(".");
  if (parts.length === 5)
    throw new RequestObjectError("invalid_request_object", "encrypted request objects are not supported");
  if (parts.length !== 3)
    throw new RequestObjectError("invalid_request_object", "the request object is not a signed JWT");
  let payload: Record<string, unknown>;
  try {
    if (client.jwks) payload = (await verify(jwt, client.jwks as JSONWebKeySet)).payload;
    else {
      try {
        payload = (await verify(jwt, await fetchJwks(app, client.jwksUri!, false))).payload;
      } catch (e) {
        // A key the cached set does not have yet (the client rotated): read the set again, once.
        if ((e as { code?: string }).code !== "ERR_JWKS_NO_MATCHING_KEY") throw e;
        payload = (await verify(jwt, await fetchJwks(app, client.jwksUri!, true))).payload;
      }
    }
  } catch (e) {
    if (e instanceof RequestObjectError) throw e;
    if (!(e as { code?: string }).code?.startsWith("ERR_J")) throw e;
    throw new RequestObjectError(
      "invalid_request_object",
      `the request object's signature or validity does not check out (${(e as { code: string }).code})`,
    );
  }
  if (payload.iss !== undefined && payload.iss !== client.clientId)
    throw new RequestObjectError("invalid_request_object", "the request object's iss is not the client");
  if (payload.client_id !== undefined && payload.client_id !== client.clientId)
    throw new RequestObjectError("invalid_request_object", "the request object's client_id is not the client");
  const aud = typeof payload.aud === "string" ? [payload.aud] : Array.isArray(payload.aud) ? payload.aud : null;
  if (issuer !== undefined && aud !== null && !aud.includes(issuer))
    throw new RequestObjectError("invalid_request_object", "the request object's aud is not this provider");
  // RFC 9101 §4: a request object never refers to another.
  if (payload.request !== undefined || payload.request_uri !== undefined)
    throw new RequestObjectError("invalid_request_object", "a request object cannot carry request or request_uri");
  const params: Record<string, string> = {};
  for (const [k, v] of Object.entries(payload)) {
    if (JWT_CLAIMS.has(k)) continue;
    if (typeof v === "string") params[k] = v;
    else if (typeof v === "number" && Number.isFinite(v)) params[k] = String(v);
  }
  return params;
}
