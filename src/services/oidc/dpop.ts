// DPoP proofs (RFC 9449): a client proves, with each request, that it holds the private key its tokens
// are bound to. §4.3's checks, the replay cache of §11.1 (a table every instance shares), the server
// nonces of §8 (stateless: an HMAC of a time window under the service key) and the key's thumbprint
// (RFC 7638), the `jkt` a bound token carries (§6.1 `cnf.jkt`).
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { and, eq, isNull, lt } from "drizzle-orm";
import { calculateJwkThumbprint, decodeProtectedHeader, EmbeddedJWK, type JWK, jwtVerify } from "jose";
import type { AppContext } from "../../boot/context.ts";
import { oidcAccessTokens, oidcDpopProofs, oidcRefreshTokens, tokens } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { findValidToken, isTokenShaped } from "../auth/tokens.ts";
import { looksLikeJwt, resolveAccessJwt } from "./access-jwt.ts";
import type { ClientRow } from "./clients.ts";
import { findRefreshToken, hashToken, type TokenResponse } from "./grants.ts";
import { serviceMacKey } from "./keys.ts";
import { OAuthError } from "./oauth-error.ts";

/** §4.3 step 5: asymmetric algorithms only (`none` and MACs never). */
export const DPOP_SIGNING_ALGS = ["ES256", "RS256", "PS256", "EdDSA"] as const;

/** Seconds a proof's `iat` may be in the past (§4.3 step 11; §11.1: the replay cache keeps a jti this long). */
export const DPOP_PROOF_MAX_AGE = 300;
/** Seconds a proof's `iat` may be ahead of this clock (clock skew). */
const DPOP_FUTURE_SKEW = 60;
/** Seconds a server nonce stays current; the previous window's nonce is still accepted. */
const NONCE_WINDOW = 300;

/** Why a proof was refused: `invalid_dpop_proof` (§7.1, §5) or `use_dpop_nonce` (§8, with a fresh nonce). */
export class DpopError extends Error {
  constructor(
    readonly error: "invalid_dpop_proof" | "use_dpop_nonce",
    description: string,
    /** The nonce to retry with (§8.1: sent in the `DPoP-Nonce` header). */
    readonly nonce?: string,
  ) {
    super(description);
  }
}

export interface DpopCheck {
  /** The request's method (`htm`). */
  method: string;
  /** The URL the request was addressed to, as the client sees it (`htu`; query and fragment ignored). */
  url: string;
  /** The access token presented with the proof (§4.3 step 10: its hash is the proof's `ath`). */
  accessToken?: string;
  /** §8: the proof must carry a nonce this server issued. */
  requireNonce?: boolean;
}

/** The access token's hash a proof carries (§4.2 `ath`): base64url SHA-256 of its ASCII. */
export const accessTokenHash = (token: string) => createHash("sha256").update(token).digest("base64url");

/** §4.3 step 9: the URI without query and fragment, normalised as RFC 3986 §6.2.2–6.2.3 (WHATWG URL parsing). */
function htuOf(raw: string): string | null {
  try {
    const u = new URL(raw);
    u.search = "";
    u.hash = "";
    return u.href;
  } catch {
    return null;
  }
}

const nonceMac = (key: Buffer, window: number) =>
  createHmac("sha256", key).update(`dpop-nonce\n${window}`).digest("base64url");

/** The server nonce of now (§8): the same on every instance, changing every NONCE_WINDOW seconds. */
export async function currentDpopNonce(app: AppContext): Promise<string> {
  return nonceMac(await serviceMacKey(app), Math.floor(Date.now() / 1000 / NONCE_WINDOW));
}

async function nonceIsCurrent(app: AppContext, nonce: unknown): Promise<boolean> {
  if (typeof nonce !== "string" || nonce.length !== 43) return false;
  const key = await serviceMacKey(app);
  const window = Math.floor(Date.now() / 1000 / NONCE_WINDOW);
  const given = Buffer.from(nonce);
  return [window, window - 1].some((w) => timingSafeEqual(Buffer.from(nonceMac(key, w)), given));
}

const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/**
 * RFC 9449 §4.3: the proof of a request, checked whole — one JWT, `typ: dpop+jwt`, an asymmetric
 * algorithm of the allow-list, a public `jwk` in its header that verifies its signature, `htm` and
 * `htu` of this request, an `iat` within the window, `ath` of the access token presented (and none
 * without one), the server's nonce when asked for, and a `jti` never seen before (§11.1). Returns the
 * key's thumbprint; a refusal throws DpopError.
 */
export async function verifyDpopProof(
  app: AppContext,
  proof: string | undefined,
  check: DpopCheck,
): Promise<{ jkt: string }> {
  const invalid = (why: string) => new DpopError("invalid_dpop_proof", why);
  // §4.3 step 1–2: exactly one proof, a well-formed JWT.
  if (!proof || proof.includes(",") || !/^[\w-]+\.[\w-]+\.[\w-]+$/.test(proof.trim()))
    throw invalid("one DPoP proof JWT is required");
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(proof);
  } catch {
    throw invalid("the DPoP proof is not a JWT");
  }
  if (header.typ !== "dpop+jwt") throw invalid("the DPoP proof's typ must be dpop+jwt");
  if (!(DPOP_SIGNING_ALGS as readonly string[]).includes(String(header.alg)))
    throw invalid(`the DPoP proof's alg must be one of ${DPOP_SIGNING_ALGS.join(", ")}`);
  const jwk = header.jwk as JWK | undefined;
  if (!jwk || typeof jwk !== "object" || PRIVATE_MEMBERS.some((m) => m in jwk))
    throw invalid("the DPoP proof's jwk must be a public key");
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(proof, EmbeddedJWK, {
      typ: "dpop+jwt",
      algorithms: [...DPOP_SIGNING_ALGS],
    }));
  } catch {
    throw invalid("the DPoP proof's signature does not verify");
  }
  const { htm, htu, iat, jti, ath, nonce } = payload;
  if (typeof jti !== "string" || jti.length === 0 || jti.length > 256) throw invalid("the DPoP proof has no jti");
  if (htm !== check.method.toUpperCase()) throw invalid("the DPoP proof's htm is not this request's method");
  const expected = htuOf(check.url);
  if (typeof htu !== "string" || expected === null || htuOf(htu) !== expected)
    throw invalid("the DPoP proof's htu is not this request's URL");
  const now = Math.floor(Date.now() / 1000);
  if (typeof iat !== "number" || iat < now - DPOP_PROOF_MAX_AGE || iat > now + DPOP_FUTURE_SKEW)
    throw invalid("the DPoP proof's iat is outside the accepted window");
  if (check.accessToken !== undefined) {
    if (typeof ath !== "string" || ath.length !== 43) throw invalid("the DPoP proof has no ath");
    if (!timingSafeEqual(Buffer.from(ath), Buffer.from(accessTokenHash(check.accessToken))))
      throw invalid("the DPoP proof's ath does not match the access token");
  }
  if (check.requireNonce && !(await nonceIsCurrent(app, nonce)))
    throw new DpopError(
      "use_dpop_nonce",
      "the authorization server requires a DPoP nonce",
      await currentDpopNonce(app),
    );
  const jkt = await calculateJwkThumbprint(jwk, "sha256");
  // §11.1: one use of a jti (per key), on every instance; kept until its iat leaves the window.
  const proofHash = createHash("sha256").update(`${jkt}\n${jti}`).digest("hex");
  const fresh = await app.db
    .insert(oidcDpopProofs)
    .values({ proofHash, expiresAt: new Date((iat + DPOP_PROOF_MAX_AGE + DPOP_FUTURE_SKEW) * 1000) })
    .onConflictDoNothing()
    .returning({ h: oidcDpopProofs.proofHash });
  if (fresh.length === 0) throw invalid("the DPoP proof was already used");
  return { jkt };
}

/** Proofs whose iat left the window go (the cleanup job): they would be refused as too old anyway. */
export async function purgeSpentDpopProofs(app: AppContext): Promise<number> {
  const gone = await app.db
    .delete(oidcDpopProofs)
    .where(lt(oidcDpopProofs.expiresAt, new Date()))
    .returning({ h: oidcDpopProofs.proofHash });
  return gone.length;
}

/**
 * RFC 9449 §5: the proof of a token request, checked against the token endpoint's URL, or null
 * without one — refused for a client registered with `dpop_bound_access_tokens` (§5.2). A refusal
 * is the token endpoint's OAuthError (§7: `invalid_dpop_proof`, or `use_dpop_nonce` with `nonce`).
 */
export async function tokenRequestProof(
  app: AppContext,
  client: ClientRow,
  proof: string | undefined,
  tokenEndpoint: string,
): Promise<{ jkt: string } | null> {
  if (proof === undefined) {
    if (client.dpopBoundAccessTokens)
      throw new OAuthError(
        400,
        "invalid_dpop_proof",
        "this client's tokens must be DPoP-bound: a DPoP proof is required",
      );
    return null;
  }
  return verifyDpopProof(app, proof, {
    method: "POST",
    url: tokenEndpoint,
    requireNonce: app.config.oidc.dpop_require_nonce,
  });
}

/**
 * RFC 9449 §5: a refresh token bound to a key is used only with a proof of that key (a bearer or
 * another key's refresh is refused before the grant runs: nothing is spent).
 */
export async function checkRefreshBinding(
  app: AppContext,
  presented: string | undefined,
  proof: { jkt: string } | null,
): Promise<void> {
  const rt = presented ? await findRefreshToken(app, presented) : null;
  if (rt?.jkt && rt.jkt !== proof?.jkt)
    throw new OAuthError(400, "invalid_dpop_proof", "the refresh token is bound to another DPoP key");
}

/**
 * RFC 9449 §5, §6: binds what a grant just issued to the proof's key, before it is handed out — the
 * access token's record (`cnf.jkt`; an RFC 9068 JWT shaped after carries it) and a public client's
 * refresh token (a confidential client's is bound to its authentication already, §5).
 */
export async function bindIssuedTokens(
  app: AppContext,
  client: ClientRow,
  answer: TokenResponse,
  jkt: string,
): Promise<TokenResponse> {
  await inTransaction(app, async (tx) => {
    const bound = await tx
      .update(oidcAccessTokens)
      .set({ jkt })
      .where(eq(oidcAccessTokens.tokenUuid, answer.access_token))
      .returning({ t: oidcAccessTokens.tokenUuid });
    // Never a token answered as DPoP-bound that is not.
    if (bound.length !== 1) throw new OAuthError(500, "server_error", "the access token could not be bound");
    // The token's own row: the token check's hot path reads the binding there (one field).
    await tx.update(tokens).set({ dpopJkt: jkt }).where(eq(tokens.uuid, answer.access_token));
    if (client.clientType === "public" && answer.refresh_token)
      await tx
        .update(oidcRefreshTokens)
        .set({ jkt })
        .where(and(eq(oidcRefreshTokens.tokenHash, hashToken(answer.refresh_token)), isNull(oidcRefreshTokens.jkt)));
  });
  // Read during the grant (not yet handed out): the cached copy learns its binding too.
  const cached = app.tokenCache.get(answer.access_token);
  if (cached) {
    cached.dpopJkt = jkt;
    if (cached.oidcGrant) cached.oidcGrant.jkt = jkt;
  }
  return { ...answer, token_type: "DPoP" };
}

/** An access token as a request presents it (RFC 6750 §2 `Bearer`, RFC 9449 §7.1 `DPoP`). */
export interface PresentedToken {
  scheme: "bearer" | "dpop";
  token: string;
}

/** The access token of an `Authorization` header, by scheme (case-insensitive, RFC 9110 §11.1). */
export function presentedToken(header: string | undefined): PresentedToken | undefined {
  const m = /^(bearer|dpop)\s+(\S+)$/i.exec(header ?? "");
  return m ? { scheme: m[1]!.toLowerCase() as PresentedToken["scheme"], token: m[2]! } : undefined;
}

/** Why a resource refuses a token's presentation (RFC 9449 §7.1–7.2), for its `WWW-Authenticate: DPoP`. */
export interface BindingRefusal {
  error: "invalid_token" | "invalid_dpop_proof" | "use_dpop_nonce";
  description: string;
  nonce?: string;
}

/**
 * RFC 9449 §7: does this presentation of a token bound to `jkt` (null: a bearer token) stand? A bearer
 * token presented as Bearer costs nothing more (the one field test); a bound one needs the `DPoP`
 * scheme and a proof of its key for this request with `ath` of the token (§7.1) — presented as
 * Bearer it is refused (§7.2: no downgrade); an unbound token is never taken for a DPoP one.
 */
export async function bindingRefusal(
  app: AppContext,
  jkt: string | null | undefined,
  presented: PresentedToken,
  proof: string | undefined,
  request: { method: string; url: string },
): Promise<BindingRefusal | null> {
  if (!jkt) {
    if (presented.scheme === "bearer") return null;
    return { error: "invalid_token", description: "the access token is not DPoP-bound" };
  }
  if (presented.scheme !== "dpop")
    return { error: "invalid_token", description: "the access token is DPoP-bound: present it with a DPoP proof" };
  try {
    const checked = await verifyDpopProof(app, proof, {
      ...request,
      accessToken: presented.token,
      requireNonce: app.config.oidc.dpop_require_nonce,
    });
    if (checked.jkt !== jkt) return { error: "invalid_token", description: "the DPoP proof is of another key" };
    return null;
  } catch (e) {
    if (!(e instanceof DpopError)) throw e;
    return { error: e.error, description: e.message, ...(e.nonce ? { nonce: e.nonce } : {}) };
  }
}

/** RFC 9449 §7.1: the `WWW-Authenticate` challenge of a refusal. */
export const dpopChallenge = (r: Pick<BindingRefusal, "error" | "description">) =>
  `DPoP error="${r.error}", error_description="${r.description}", algs="${DPOP_SIGNING_ALGS.join(" ")}"`;

/**
 * A DPoP-bound token is no bearer token at the token endpoint either: a grant that reads tokens
 * (RFC 8693 token exchange: `subject_token`, `actor_token`) takes a bound one only from a request
 * with a proof of its key — else a thief of the token would exchange it for an unbound one.
 */
export async function checkPresentedBindings(
  app: AppContext,
  presented: Record<string, string | undefined>,
  proof: { jkt: string } | null,
): Promise<void> {
  for (const [name, value] of Object.entries(presented)) {
    if (!value) continue;
    const uuid = looksLikeJwt(value)
      ? ((await resolveAccessJwt(app, value))?.anchorUuid ?? null)
      : isTokenShaped(value)
        ? value
        : null;
    const token = uuid ? await findValidToken(app, uuid) : null;
    if (token?.dpopJkt && token.dpopJkt !== proof?.jkt)
      throw new OAuthError(400, "invalid_dpop_proof", `the ${name} is DPoP-bound: a proof of its key is required`);
  }
}
