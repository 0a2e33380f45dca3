// An upstream provider's metadata (OpenID Connect Discovery 1.0 §4) and keys (its `jwks_uri`), fetched
// through the outbound guard (services/outbound/fetch.ts: the issuer is a URL a tenant administrator chose,
// and so is every URL its discovery names) and kept in memory for a while. Every instance fetches its own
// copy: nothing here needs to be shared.
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import type { AppContext } from "../../../boot/context.ts";
import { OutboundRefused, outboundFetch, outboundPolicy, type OutboundPolicy } from "../../outbound/fetch.ts";

/** The fields of the discovery document this service reads. */
export interface UpstreamMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  userinfo_endpoint?: string;
  end_session_endpoint?: string;
  code_challenge_methods_supported?: string[];
  id_token_signing_alg_values_supported?: string[];
}

/** Why an upstream provider cannot be used now; `message` is safe to show to its administrator. */
export class UpstreamUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UpstreamUnavailable";
  }
}

const METADATA_TTL_MS = 60 * 60 * 1000;
const JWKS_TTL_MS = 10 * 60 * 1000;
/** A key id the cached set lacks (a rotation upstream) refetches the set, at most this often. */
const JWKS_REFETCH_MS = 30 * 1000;

interface Cached<T> {
  value: T;
  at: number;
}
const metadataCache = new WeakMap<AppContext, Map<string, Cached<UpstreamMetadata>>>();
const jwksCache = new WeakMap<AppContext, Map<string, Cached<JSONWebKeySet>>>();

function cacheOf<T>(store: WeakMap<AppContext, Map<string, Cached<T>>>, app: AppContext): Map<string, Cached<T>> {
  let map = store.get(app);
  if (!map) {
    map = new Map();
    store.set(app, map);
  }
  return map;
}

export const policyOf = (app: AppContext): OutboundPolicy => outboundPolicy(app.config.outbound_http);

/** A GET of JSON through the guard; every failure an UpstreamUnavailable saying what went wrong. */
export async function fetchJson(app: AppContext, url: string, init: RequestInit = {}): Promise<unknown> {
  let answer: Awaited<ReturnType<typeof outboundFetch>>;
  try {
    answer = await outboundFetch(
      url,
      { ...init, headers: { Accept: "application/json", ...init.headers } },
      policyOf(app),
    );
  } catch (e) {
    if (e instanceof OutboundRefused) throw new UpstreamUnavailable(e.message);
    throw e;
  }
  if (answer.status < 200 || answer.status >= 300)
    throw new UpstreamUnavailable(`${new URL(url).host} answered ${answer.status}`);
  try {
    return JSON.parse(answer.body);
  } catch {
    throw new UpstreamUnavailable(`${new URL(url).host} did not answer JSON`);
  }
}

/** The discovery document's URL (OpenID Connect Discovery 1.0 §4: the issuer, then the well-known path). */
export const discoveryUrl = (issuer: string) => `${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;

/**
 * The provider's metadata, from the cache while fresh. Checks what Discovery §4.3 requires (the
 * `issuer` it announces is the one configured) and that it can do what this service asks of it
 * (the code flow with PKCE S256, RFC 7636 §4.2).
 */
export async function upstreamMetadata(
  app: AppContext,
  issuer: string,
  { fresh = false, templateIssuer = false }: { fresh?: boolean; templateIssuer?: boolean } = {},
): Promise<UpstreamMetadata> {
  const cache = cacheOf(metadataCache, app);
  const hit = cache.get(issuer);
  if (hit && !fresh && Date.now() - hit.at < METADATA_TTL_MS) return hit.value;
  const doc = (await fetchJson(app, discoveryUrl(issuer))) as Record<string, unknown>;
  const str = (name: string) => (typeof doc[name] === "string" && doc[name] !== "" ? (doc[name] as string) : undefined);
  for (const name of ["issuer", "authorization_endpoint", "token_endpoint", "jwks_uri"])
    if (!str(name)) throw new UpstreamUnavailable(`the discovery document has no ${name}`);
  // §4.3: the issuer announced must be identical to the one used to find the document. A multi-tenant
  // Microsoft Entra ID document announces a template (`…/{tenantid}/v2.0`): checked per token instead.
  if (str("issuer") !== issuer && !(templateIssuer && str("issuer")!.includes("{tenantid}")))
    throw new UpstreamUnavailable(`the discovery document names another issuer (${str("issuer")})`);
  const methods = Array.isArray(doc.code_challenge_methods_supported)
    ? (doc.code_challenge_methods_supported as unknown[])
    : undefined;
  if (methods && !methods.includes("S256"))
    throw new UpstreamUnavailable("the provider does not support PKCE with S256 (code_challenge_methods_supported)");
  const metadata: UpstreamMetadata = {
    issuer: str("issuer")!,
    authorization_endpoint: str("authorization_endpoint")!,
    token_endpoint: str("token_endpoint")!,
    jwks_uri: str("jwks_uri")!,
    userinfo_endpoint: str("userinfo_endpoint"),
    end_session_endpoint: str("end_session_endpoint"),
    code_challenge_methods_supported: methods as string[] | undefined,
    id_token_signing_alg_values_supported: Array.isArray(doc.id_token_signing_alg_values_supported)
      ? (doc.id_token_signing_alg_values_supported as string[])
      : undefined,
  };
  cache.set(issuer, { value: metadata, at: Date.now() });
  return metadata;
}

async function fetchJwks(app: AppContext, uri: string): Promise<JSONWebKeySet> {
  const set = (await fetchJson(app, uri)) as JSONWebKeySet;
  if (!set || !Array.isArray(set.keys)) throw new UpstreamUnavailable("the provider's jwks_uri is not a JWK Set");
  cacheOf(jwksCache, app).set(uri, { value: set, at: Date.now() });
  return set;
}

/**
 * A key resolver for `jose.jwtVerify` over the provider's JWK Set: the cached set, refetched when it is
 * old or lacks the token's key (a rotation upstream), at most every JWKS_REFETCH_MS.
 */
export async function upstreamKeys(app: AppContext, jwksUri: string): Promise<JWTVerifyGetKey> {
  const cache = cacheOf(jwksCache, app);
  const hit = cache.get(jwksUri);
  const set = hit && Date.now() - hit.at < JWKS_TTL_MS ? hit.value : await fetchJwks(app, jwksUri);
  let local = createLocalJWKSet(set);
  return async (header, token) => {
    try {
      return await local(header, token);
    } catch (e) {
      const at = cache.get(jwksUri)?.at ?? 0;
      if ((e as { code?: string }).code !== "ERR_JWKS_NO_MATCHING_KEY" || Date.now() - at < JWKS_REFETCH_MS) throw e;
      local = createLocalJWKSet(await fetchJwks(app, jwksUri));
      return local(header, token);
    }
  };
}

/** Forgets what is cached of an issuer (its provider changed or went). */
export function forgetUpstream(app: AppContext, issuer: string): void {
  const hit = cacheOf(metadataCache, app).get(issuer);
  cacheOf(metadataCache, app).delete(issuer);
  if (hit) cacheOf(jwksCache, app).delete(hit.value.jwks_uri);
}
