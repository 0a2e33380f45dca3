// Access tokens for a resource server (RFC 8707 resource indicators, RFC 9068 JWT access tokens;
// docs/openid-connect.md "Resource servers and JWT access tokens"). A token requested with
// `resource=` for a `jwt` resource is an RFC 9068 JWT (`typ: at+jwt`) signed with the provider's
// rotating keys: the resource verifies it offline from the JWKS. Tessera still knows it: the JWT
// stands for the Tessera token the grant issued (its anchor, never handed out), found again by the
// JWT's `jti`, so revoking that token (logout, DELETE, RFC 7009, a refresh family's end) makes
// HEAD /0.1/token and introspection answer the JWT as revoked. Its ACL claim is the anchor's ACL
// narrowed to what the resource may receive (acl-scope.ts narrowAcl).
import { eq } from "drizzle-orm";
import type { JWK, JWTPayload } from "jose";
import type { AppContext } from "../../boot/context.ts";
import { oidcAccessTokens, tokens } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { type AclMatcher, compileAcl } from "../../domain/acl.ts";
import type { CachedToken } from "../auth/token-cache.ts";
import { checkFoundToken, findValidToken, isTokenShaped, tokenRecordOf } from "../auth/tokens.ts";
import { narrowAcl } from "./acl-scope.ts";
import type { ClientRow } from "./clients.ts";
import type { TokenResponse } from "./grants.ts";
import { atHash } from "./id-token.ts";
import { publicJwks, SIGNING_ALGS, type SigningAlg, signingKey } from "./keys.ts";
import { OAuthError } from "./oauth-error.ts";
import { type ResourceRow, resourceOfTenant } from "./resources.ts";

/** RFC 9068 §2.1: the `typ` header of a JWT access token. */
export const ACCESS_JWT_TYP = "at+jwt";

/**
 * The cheap shape test that keeps JWT work off the opaque tokens' path: a compact JWS whose header
 * is a JSON object (`eyJ`), two dots, bounded. No decoding, no allocation.
 */
export function looksLikeJwt(s: string): boolean {
  if (s.length < 40 || s.length > 8_192 || s.charCodeAt(0) !== 101 || !s.startsWith("eyJ")) return false;
  const first = s.indexOf(".");
  const second = first > 0 ? s.indexOf(".", first + 1) : -1;
  return second > first + 1 && second < s.length - 1 && s.indexOf(".", second + 1) < 0;
}

/** Where a token request's access token goes: Tessera's own API (the usual token) or a registered resource. */
export type ResourceTarget = { kind: "tessera" } | { kind: "resource"; resource: ResourceRow };

/** Tessera's own API as a resource (RFC 9728 §2 `resource`): the issuer's `/0.1`. */
export const ownApiResource = (issuer: string) => issuer.replace(/\/oidc$/, "");

/**
 * The resource a token request names (RFC 8707 §2), decided before the grant runs (so a refused
 * target spends no code): a resource of the client's tenant, or Tessera's own API; anything else
 * is `invalid_target` (§2). With `authorized` (the resource of the code's authorization request,
 * §2.1), the request names that one or none — none meaning it.
 */
export async function resourceTarget(
  app: AppContext,
  client: ClientRow,
  requested: unknown,
  issuer: string,
  authorized: string | null = null,
): Promise<ResourceTarget | null> {
  if (authorized !== null && requested !== undefined && requested !== authorized)
    throw new OAuthError(400, "invalid_target", "the resource is not the one the authorization request indicated");
  const resource = requested ?? authorized ?? undefined;
  if (resource === undefined) return null;
  if (typeof resource !== "string") throw new OAuthError(400, "invalid_target", "one resource per token request");
  if (resource === ownApiResource(issuer)) return { kind: "tessera" };
  const row = resource.length <= 2_048 ? await resourceOfTenant(app, client.tenantUuid, resource) : null;
  if (!row) throw new OAuthError(400, "invalid_target", "unknown resource");
  return { kind: "resource", resource: row };
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * The grant's answer shaped for the resource: for a `jwt` resource its access token becomes an
 * RFC 9068 JWT (and an ID token beside it is signed again, its `at_hash` being of the access token
 * handed out, OIDC Core §3.1.3.6); an `opaque` resource keeps the Tessera token, narrowed in place.
 * Either way the token carries only the ACL entries the resource may receive and the holder holds,
 * lives at most the resource's `access_token_lifetime`, and its record remembers the resource.
 */
export async function shapeForResource(
  app: AppContext,
  client: ClientRow,
  answer: TokenResponse,
  target: ResourceTarget,
  issuer: string,
): Promise<TokenResponse> {
  if (target.kind === "tessera") return answer;
  const { resource } = target;
  const anchor = await findValidToken(app, answer.access_token);
  if (!anchor) throw new OAuthError(400, "invalid_grant", "the grant was revoked");
  const now = nowSeconds();
  const exp = Math.min(anchor.expireT, resource.accessTokenLifetime ? now + resource.accessTokenLifetime : Infinity);
  const acl = narrowAcl(anchor.acl, resource.acl, { authId: anchor.authId, sessionUuid: anchor.sessionUuid });
  if (resource.tokenFormat !== "jwt") {
    // The opaque token handed out is the grant's own Tessera token, minted for this answer and not
    // yet seen by anyone: it is narrowed in place to what the resource may receive and to its lifetime.
    const mark = app.tokenCache.mark();
    const [row] = await inTransaction(app, async (tx) => {
      await tx
        .update(oidcAccessTokens)
        .set({ resource: resource.identifier })
        .where(eq(oidcAccessTokens.tokenUuid, anchor.uuid));
      return tx.update(tokens).set({ acl, expireT: exp }).where(eq(tokens.uuid, anchor.uuid)).returning();
    });
    if (!row) throw new OAuthError(400, "invalid_grant", "the grant was revoked");
    // This instance may have cached the wider token (the lookup above): the narrowed one replaces it.
    app.tokenCache.add(tokenRecordOf(row), mark);
    return { ...answer, expires_in: Math.max(0, exp - now) };
  }
  const userUuid = typeof anchor.metadata.uuid === "string" ? anchor.metadata.uuid : null;
  const jti = crypto.randomUUID();
  const alg = app.config.oidc.default_signing_alg as SigningAlg;
  const key = await signingKey(app, alg);
  const { SignJWT } = await import("jose");
  const claims: JWTPayload = {
    client_id: client.clientId,
    scope: answer.scope,
    acl,
    tenant_uuid: (anchor.metadata.tenant_uuid as string | undefined) ?? client.tenantUuid,
  };
  // RFC 8693 §4.1: the acting party of a token exchange, kept on the token's record.
  const [record] = await app.db
    .select({ act: oidcAccessTokens.act, jkt: oidcAccessTokens.jkt })
    .from(oidcAccessTokens)
    .where(eq(oidcAccessTokens.tokenUuid, anchor.uuid));
  if (record?.act) claims.act = record.act;
  // RFC 9449 §6.1: a DPoP-bound token names its key's thumbprint.
  if (record?.jkt) claims.cnf = { jkt: record.jkt };
  const jwt = await new SignJWT(claims)
    .setProtectedHeader({ alg, kid: key.kid, typ: ACCESS_JWT_TYP })
    .setIssuer(issuer)
    .setSubject(userUuid ?? client.clientId)
    .setAudience(resource.identifier)
    .setIssuedAt(now)
    .setExpirationTime(exp)
    .setJti(jti)
    .sign(key.privateKey);
  await app.db
    .update(oidcAccessTokens)
    .set({ jti, resource: resource.identifier })
    .where(eq(oidcAccessTokens.tokenUuid, anchor.uuid));
  const shaped: TokenResponse = { ...answer, access_token: jwt, expires_in: Math.max(0, exp - now) };
  if (answer.id_token) shaped.id_token = await resignIdToken(app, answer.id_token, jwt);
  return shaped;
}

/** The ID token signed again with `at_hash` of the access token actually handed out. */
async function resignIdToken(app: AppContext, idToken: string, accessToken: string): Promise<string> {
  const { decodeJwt, decodeProtectedHeader, SignJWT } = await import("jose");
  const header = decodeProtectedHeader(idToken);
  const key = await signingKey(app, header.alg as SigningAlg);
  return new SignJWT({ ...decodeJwt(idToken), at_hash: atHash(accessToken) })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "JWT" })
    .sign(key.privateKey);
}

/** A verified JWT access token of this provider, with the Tessera token it stands for. */
export interface ResolvedJwt {
  jwt: string;
  anchorUuid: string;
  claims: JWTPayload & { acl: string[]; client_id?: string; scope?: string };
  exp: number;
  /** The JWT's ACL claim compiled once, bound to the anchor's ids (at its first check). */
  matcher?: AclMatcher;
}

interface JwtCaches {
  keys: Map<string, CryptoKey>;
  resolved: Map<string, ResolvedJwt>;
}
const caches = new WeakMap<AppContext, JwtCaches>();
const cachesOf = (app: AppContext) =>
  caches.get(app) ?? caches.set(app, { keys: new Map(), resolved: new Map() }).get(app)!;
/** JWTs verified and resolved, kept until they expire (bounded: past it the memo starts again). */
const RESOLVED_CAPACITY = 10_000;

/** A public key of the JWK Set by its `kid` (current or retired and still published). */
async function verificationKey(app: AppContext, kid: string | undefined): Promise<CryptoKey> {
  const c = cachesOf(app);
  const known = kid ? c.keys.get(kid) : undefined;
  if (known) return known;
  const jwk = (await publicJwks(app)).keys.find((k: JWK) => k.kid === kid);
  if (!jwk || !kid) throw new Error("unknown key");
  const { importJWK } = await import("jose");
  const key = (await importJWK(jwk, jwk.alg)) as CryptoKey;
  c.keys.set(kid, key);
  return key;
}

/**
 * The JWT access token verified (signature by a published key, `typ: at+jwt`, unexpired) and
 * resolved to the Tessera token it stands for; null when it is none of this provider's, expired,
 * or no longer known. Whether that token is still valid (revocation) is the caller's check, every
 * time (the memo keeps only what never changes: the signature and the mapping).
 */
export async function resolveAccessJwt(app: AppContext, jwt: string): Promise<ResolvedJwt | null> {
  if (!looksLikeJwt(jwt)) return null;
  const c = cachesOf(app);
  const memo = c.resolved.get(jwt);
  if (memo) {
    if (memo.exp > Date.now() / 1000) return memo;
    c.resolved.delete(jwt);
    return null;
  }
  const { jwtVerify } = await import("jose");
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(jwt, (header) => verificationKey(app, header.kid), {
      typ: ACCESS_JWT_TYP,
      algorithms: [...SIGNING_ALGS],
    }));
  } catch {
    return null;
  }
  if (typeof payload.jti !== "string" || typeof payload.exp !== "number" || !Array.isArray(payload.acl)) return null;
  const [row] = await app.db
    .select({ tokenUuid: oidcAccessTokens.tokenUuid })
    .from(oidcAccessTokens)
    .where(eq(oidcAccessTokens.jti, payload.jti));
  if (!row || !isTokenShaped(row.tokenUuid)) return null;
  const acl = payload.acl.filter((e): e is string => typeof e === "string");
  const resolved: ResolvedJwt = {
    jwt,
    anchorUuid: row.tokenUuid,
    claims: { ...payload, acl },
    exp: payload.exp,
  };
  if (c.resolved.size >= RESOLVED_CAPACITY) c.resolved.clear();
  c.resolved.set(jwt, resolved);
  return resolved;
}

/** A JWT already verified and resolved by this instance (memory only: the token check's fast path). */
export function resolvedJwtNow(app: AppContext, jwt: string): ResolvedJwt | undefined {
  const memo = caches.get(app)?.resolved.get(jwt);
  return memo && memo.exp > Date.now() / 1000 ? memo : undefined;
}

/**
 * The JWT as a token of the REST API's token check: its anchor while valid, seen with the JWT's
 * ACL and expiry (never the anchor's wider ACL), or null (unknown, expired, revoked).
 */
export async function jwtTokenView(
  app: AppContext,
  jwt: string,
): Promise<{ view: CachedToken; anchor: CachedToken } | null> {
  const resolved = await resolveAccessJwt(app, jwt);
  const anchor = resolved ? await findValidToken(app, resolved.anchorUuid) : null;
  if (!resolved || !anchor) return null;
  resolved.matcher ??= compileAcl(resolved.claims.acl, { authId: anchor.authId, sessionUuid: anchor.sessionUuid });
  const view: CachedToken = {
    ...anchor,
    uuid: jwt,
    acl: resolved.claims.acl,
    matcher: resolved.matcher,
    expireT: Math.min(anchor.expireT, resolved.exp),
  };
  return { view, anchor };
}

/**
 * The token check (HEAD and GET /0.1/token/{token}) of a JWT access token: its scope against the
 * JWT's ACL, its tenant by the anchor's user; 404 when unknown, expired or revoked.
 */
export async function checkJwtToken(
  app: AppContext,
  jwt: string,
  scope: string | undefined,
  tenant: string | undefined,
): Promise<CachedToken> {
  const found = await jwtTokenView(app, jwt);
  return checkFoundToken(app, found?.view ?? null, scope, tenant, found?.anchor ?? null);
}
