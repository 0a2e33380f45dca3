// A sign-in through an upstream OpenID Connect provider (docs/federation.md): the authorization code flow
// of OIDC Core §3.1 with PKCE S256 (RFC 7636), `state` bound to the browser that started it and used once,
// and `nonce`; the ID token verified with jose against the provider's keys as OIDC Core §3.1.3.7 says
// (signature, iss, aud, azp, exp, nonce); userinfo (§5.3) for the claims the ID token lacks. The user is
// then found by the link (provider, upstream `sub`), else made (`provisioning: create`), else refused: an
// existing account is never taken over by an email address alone. The result is a one-time completion
// secret that the `oidc` identity provider (plugins/idp/oidc.ts) turns into a login, as POST /0.1/token
// does for every other identity provider (throttling, disabled users, the second factor).
import { createHash, randomBytes } from "node:crypto";
import { and, eq, gt, isNotNull, isNull, lt, sql } from "drizzle-orm";
import { decodeJwt, errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import type { AppContext } from "../../../boot/context.ts";
import {
  emails,
  upstreamOidcLinks,
  upstreamOidcLogins,
  upstreamOidcProviders,
  upstreamOidcTokenUses,
  users,
} from "../../../db/schema.ts";
import { inTransaction } from "../../../db/tx.ts";
import { ApiError } from "../../../domain/errors.ts";
import { localeTag } from "../../../domain/validate.ts";
import type { UpstreamLoginOutcome } from "../../../plugins/types.ts";
import { recordAudit, SYSTEM_ACTOR } from "../../audit/record.ts";
import { effectiveMethod } from "../../auth/identity-providers.ts";
import { createUser, publishUserEvent, userAudit } from "../../identity/users.ts";
import { isSubtenant } from "../../identity/tenant-tree.ts";
import {
  fetchJson,
  policyOf,
  UpstreamUnavailable,
  upstreamKeys,
  upstreamMetadata,
  type UpstreamMetadata,
} from "./discovery.ts";
import { amrOf, upstreamMfaTrusted } from "./amr.ts";
import { githubClaims } from "./github.ts";
import { githubEndpoints } from "./github-endpoints.ts";
import { rememberUpstreamSession } from "./upstream-sessions.ts";
import {
  DEFAULT_CLAIM_MAPPING,
  findProvider,
  redirectUriOf,
  type ClaimMapping,
  type ProviderRow,
} from "./providers.ts";
import { UpstreamSignInRefused } from "./refused.ts";
import { requestTokens } from "./token-request.ts";

export { UpstreamSignInRefused };

/** How long a sign-in may stay at the upstream provider (its login page, its second factor). */
export const UPSTREAM_LOGIN_SECONDS = 600;
/** The identity providers' authentication method of users made or signed in by an upstream provider. */
export const UPSTREAM_METHOD = "oidc";
/** Clock skew allowed on `exp`, `iat`, `nbf` (OIDC Core §3.1.3.7 items 9-10 leave it to the client). */
export const CLOCK_TOLERANCE_SECONDS = 60;
/** Asymmetric algorithms only: an HMAC-signed ID token would be keyed with the client secret. */
export const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];

const sha256 = (s: string) => createHash("sha256").update(s).digest("base64url");
const secret = () => randomBytes(32).toString("base64url");

export interface StartedUpstreamLogin {
  /** The upstream authorization URL to send the browser to. */
  location: string;
  /** The cookie value binding the sign-in to this browser. */
  browserSecret: string;
}

/** The issuer an ID token must name: the configured one, or Entra ID's template filled with the token's `tid`. */
export function expectedIssuer(provider: ProviderRow, metadata: UpstreamMetadata, token: string): string {
  if (!metadata.issuer.includes("{tenantid}")) return metadata.issuer;
  let tid: unknown;
  try {
    tid = decodeJwt(token).tid;
  } catch {
    tid = undefined;
  }
  if (typeof tid !== "string" || !/^[0-9a-f-]{36}$/i.test(tid))
    throw new UpstreamSignInRefused(`${provider.displayName} sent an ID token without a tenant (tid).`, "no_tid");
  return metadata.issuer.replace("{tenantid}", tid);
}

async function metadataFor(app: AppContext, provider: ProviderRow): Promise<UpstreamMetadata> {
  try {
    return await upstreamMetadata(app, provider.issuer, { templateIssuer: provider.preset === "entra" });
  } catch (e) {
    if (!(e instanceof UpstreamUnavailable)) throw e;
    app.log.warn("upstream provider unreachable", { provider_uuid: provider.uuid, error: e.message });
    throw new UpstreamSignInRefused(
      `${provider.displayName} cannot be reached now (${e.message}). Try again later, or sign in another way.`,
      "unreachable",
    );
  }
}

/** The button: a new sign-in under way, and the upstream authorization URL (OIDC Core §3.1.2.1). */
export async function beginUpstreamLogin(
  app: AppContext,
  provider: ProviderRow,
  params: Record<string, string>,
  tesseraIssuer: string,
  /** The authorization request's `login_hint` (request object included), or the name typed at the identifier step. */
  loginHint: string | null = null,
): Promise<StartedUpstreamLogin> {
  if (provider.provisioning === "off") throw offRefusal(provider);
  // GitHub: no discovery, its fixed endpoints (github.ts).
  const authorizationEndpoint =
    provider.preset === "github"
      ? githubEndpoints(provider.issuer).authorization
      : (await metadataFor(app, provider)).authorization_endpoint;
  const state = secret();
  const nonce = secret();
  const verifier = secret(); // RFC 7636 §4.1: 43 characters of the unreserved set
  const browserSecret = secret();
  await app.db.delete(upstreamOidcLogins).where(lt(upstreamOidcLogins.expiresAt, new Date()));
  await app.db.insert(upstreamOidcLogins).values({
    stateHash: sha256(state),
    providerUuid: provider.uuid,
    browserHash: sha256(browserSecret),
    nonce,
    codeVerifier: verifier,
    params,
    expiresAt: new Date(Date.now() + UPSTREAM_LOGIN_SECONDS * 1000),
  });
  const url = new URL(authorizationEndpoint);
  const query: Record<string, string> = {
    response_type: "code",
    client_id: provider.clientId,
    redirect_uri: redirectUriOf(tesseraIssuer, provider.uuid),
    scope: provider.scopes.join(" "),
    state,
    nonce,
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
  };
  // No ID token, no nonce (OIDC Core §3.1.2.1 defines it; plain OAuth 2.0 has none).
  if (provider.preset === "github") delete query.nonce;
  // The name the user already gave (the authorization request's, or the one typed at the identifier
  // step): OIDC Core §3.1.2.1 `login_hint`, so it is not typed twice; GitHub's equivalent is `login`
  // ("Suggests a specific account to use for signing in", GitHub's "Authorizing OAuth apps").
  if (loginHint) query[provider.preset === "github" ? "login" : "login_hint"] = loginHint;
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  return { location: url.toString(), browserSecret };
}

const offRefusal = (provider: ProviderRow) =>
  new UpstreamSignInRefused(
    `Sign-in with ${provider.displayName} has been turned off by the administrator. Sign in another way.`,
    "provisioning_off",
  );

export interface UpstreamCallback {
  code?: string;
  state?: string;
  error?: string;
  iss?: string;
}

export interface FinishedUpstreamLogin {
  /** Tessera's authorization request, resumed. */
  params: Record<string, string>;
  /** The one-time secret of the completed sign-in, for POST /0.1/token's `upstream_login`. */
  completion: string;
  /** An existing account of the verified email awaits its password before it is linked (link-proof.ts). */
  needsPassword: boolean;
}

/**
 * Back from the provider (OIDC Core §3.1.2.5): the sign-in under way, taken once; the code exchanged;
 * the ID token verified; the user found or made. Throws UpstreamSignInRefused with what to show.
 */
export async function finishUpstreamLogin(
  app: AppContext,
  providerUuid: string,
  callback: UpstreamCallback,
  browserSecret: string | undefined,
  tesseraIssuer: string,
  /** The user of this browser's Tessera session, if any: the proof that links an existing account. */
  sessionUserUuid: string | null = null,
): Promise<FinishedUpstreamLogin> {
  const expired = () =>
    new UpstreamSignInRefused("This sign-in has expired or was already used. Start again.", "state");
  if (!callback.state) throw expired();
  const completion = secret();
  // Taken once (a replayed `state` finds nothing): marked with its completion before anything else.
  const [row] = await app.db
    .update(upstreamOidcLogins)
    .set({ completionHash: sha256(completion) })
    .where(
      and(
        eq(upstreamOidcLogins.stateHash, sha256(callback.state)),
        eq(upstreamOidcLogins.providerUuid, providerUuid),
        isNull(upstreamOidcLogins.completionHash),
        gt(upstreamOidcLogins.expiresAt, new Date()),
      ),
    )
    .returning();
  if (!row) throw expired();
  const drop = () => app.db.delete(upstreamOidcLogins).where(eq(upstreamOidcLogins.stateHash, row.stateHash));
  try {
    // The browser that started it, and no other (a link to this URL signs nobody in: login CSRF, RFC 9700 §4.7).
    if (!browserSecret || sha256(browserSecret) !== row.browserHash) throw expired();
    const provider = await findProvider(app, providerUuid);
    if (!provider) throw expired();
    if (provider.provisioning === "off") throw offRefusal(provider);
    if (callback.error)
      throw new UpstreamSignInRefused(
        `${provider.displayName} did not sign you in (${callback.error.slice(0, 100)}).`,
        "upstream_error",
      );
    if (!callback.code) throw new UpstreamSignInRefused(`${provider.displayName} sent no code.`, "no_code");
    // GitHub answers no ID token: no upstream session to remember, nothing to log out of there.
    const { claims, idToken } =
      provider.preset === "github"
        ? {
            claims: await githubClaims(
              app,
              provider,
              callback.code,
              row.codeVerifier,
              redirectUriOf(tesseraIssuer, provider.uuid),
            ),
            idToken: null,
          }
        : await openIdClaims(app, provider, { ...callback, code: callback.code }, row, tesseraIssuer);
    const found = await userFor(app, provider, claims, sessionUserUuid);
    // An existing account of the verified email, not yet proven: kept, for its password on the next page.
    const proof = typeof found === "string" ? null : found.linkUserUuid;
    await app.db
      .update(upstreamOidcLogins)
      .set(
        proof
          ? { linkUserUuid: proof, subject: String(claims.sub) }
          : // The verified ID token's `amr` (GitHub: none), for the login to weigh against `trust_amr` (amr.ts).
            {
              userUuid: found as string,
              subject: String(claims.sub),
              amr: idToken === null ? null : amrOf(claims.amr),
            },
      )
      .where(eq(upstreamOidcLogins.stateHash, row.stateHash));
    // For logout with the provider (logout.ts): its session, bound to the browser session on resume.
    if (idToken !== null) await rememberUpstreamSession(app, provider, claims, idToken, completion, row.expiresAt);
    return { params: row.params, completion, needsPassword: proof !== null };
  } catch (e) {
    await drop();
    throw e;
  }
}

/** An OpenID provider's answer: the `iss` parameter, the code exchanged, the ID token verified (§3.1.3.7). */
async function openIdClaims(
  app: AppContext,
  provider: ProviderRow,
  callback: UpstreamCallback & { code: string },
  row: { codeVerifier: string; nonce: string },
  tesseraIssuer: string,
): Promise<{ claims: JWTPayload; idToken: string }> {
  const metadata = await metadataFor(app, provider);
  // RFC 9207 §2.4: the issuer the answer names, when it names one, is the one the request went to.
  if (callback.iss !== undefined && callback.iss !== metadata.issuer && !metadata.issuer.includes("{tenantid}"))
    throw new UpstreamSignInRefused(`The answer did not come from ${provider.displayName}.`, "iss_parameter");
  const tokens = await exchangeCode(app, provider, metadata, callback.code, row.codeVerifier, tesseraIssuer);
  return { claims: await verifiedClaims(app, provider, metadata, tokens, row.nonce), idToken: tokens.id_token };
}

interface TokenResponse {
  id_token: string;
  access_token?: string;
}

async function exchangeCode(
  app: AppContext,
  provider: ProviderRow,
  metadata: UpstreamMetadata,
  code: string,
  verifier: string,
  tesseraIssuer: string,
): Promise<TokenResponse> {
  const body = await requestTokens(
    app,
    provider,
    metadata.token_endpoint,
    {
      grant_type: "authorization_code",
      code,
      redirect_uri: redirectUriOf(tesseraIssuer, provider.uuid),
      code_verifier: verifier,
    },
    "basic",
    (answer) => typeof answer.id_token === "string",
  );
  return {
    id_token: body.id_token as string,
    access_token: typeof body.access_token === "string" ? body.access_token : undefined,
  };
}

/** OIDC Core §3.1.3.7, then §5.3 (userinfo) for the claims the ID token does not carry. */
async function verifiedClaims(
  app: AppContext,
  provider: ProviderRow,
  metadata: UpstreamMetadata,
  tokens: TokenResponse,
  nonce: string,
): Promise<JWTPayload> {
  const payload = await verifyIdToken(app, provider, metadata, tokens.id_token);
  // §3.1.3.7 item 11 (the nonce sent in the request, OIDC Core §15.5.2).
  if (payload.nonce !== nonce) throw refusedToken(provider, "nonce");
  const mapping = mappingOf(provider);
  const wanted = [mapping.username, mapping.email, mapping.firstname, mapping.lastname];
  if (metadata.userinfo_endpoint && tokens.access_token && wanted.some((claim) => payload[claim] === undefined)) {
    let info: Record<string, unknown>;
    try {
      info = (await fetchJson(app, metadata.userinfo_endpoint, {
        headers: { Authorization: `Bearer ${tokens.access_token}` },
      })) as Record<string, unknown>;
    } catch (e) {
      if (!(e instanceof UpstreamUnavailable)) throw e;
      throw new UpstreamSignInRefused(`${provider.displayName} did not answer for your profile.`, "userinfo");
    }
    // §5.3.4: the userinfo `sub` must be the ID token's, or the answer is not about this user.
    if (info?.sub !== payload.sub) throw refusedToken(provider, "userinfo_sub");
    return { ...info, ...payload };
  }
  return payload;
}

const refusedToken = (provider: ProviderRow, reason: string) =>
  new UpstreamSignInRefused(`${provider.displayName} sent an identity that could not be verified.`, reason);

/** Signature, iss, aud, exp/iat/nbf (jose), azp (§3.1.3.7 items 4-5), sub present. */
export async function verifyIdToken(
  app: AppContext,
  provider: ProviderRow,
  metadata: UpstreamMetadata,
  idToken: string,
  audiences: string[] = [provider.clientId],
): Promise<JWTPayload> {
  const issuer = expectedIssuer(provider, metadata, idToken);
  let keys: Awaited<ReturnType<typeof upstreamKeys>>;
  try {
    keys = await upstreamKeys(app, metadata.jwks_uri);
  } catch (e) {
    if (!(e instanceof UpstreamUnavailable)) throw e;
    throw new UpstreamSignInRefused(`${provider.displayName}'s keys cannot be fetched now (${e.message}).`, "jwks");
  }
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(idToken, keys, {
      issuer,
      audience: audiences,
      algorithms: ALGORITHMS,
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      requiredClaims: ["sub", "exp", "iat"],
    }));
  } catch (e) {
    const reason =
      e instanceof joseErrors.JWTExpired
        ? "expired"
        : e instanceof joseErrors.JWTClaimValidationFailed
          ? `claim_${e.claim}`
          : e instanceof joseErrors.JWSSignatureVerificationFailed
            ? "signature"
            : ((e as { code?: string }).code ?? "invalid");
    app.log.info("upstream ID token refused", { provider_uuid: provider.uuid, reason });
    throw refusedToken(provider, reason);
  }
  const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  // Items 4-5: several audiences need `azp`, and an `azp` must be this client.
  if (aud.length > 1 && payload.azp === undefined) throw refusedToken(provider, "azp_missing");
  if (payload.azp !== undefined && !audiences.includes(String(payload.azp))) throw refusedToken(provider, "azp");
  if (typeof payload.sub !== "string" || payload.sub === "" || payload.sub.length > 255)
    throw refusedToken(provider, "sub");
  return payload;
}

export const mappingOf = (provider: ProviderRow): ClaimMapping => ({
  ...DEFAULT_CLAIM_MAPPING,
  ...provider.claimMapping,
});

const claimText = (claims: JWTPayload, name: string, max = 256): string | null => {
  const v = claims[name];
  return typeof v === "string" && v.trim() !== "" && v.length <= max ? v.trim() : null;
};
const tag = localeTag();
/**
 * The user's language from the mapped claim (OIDC Core §5.1 `locale`: a BCP 47 tag; `en_US`, which
 * §5.1 lets a relying party accept, read as `en-US`), canonicalised as the users API does; null when
 * absent or not a tag (a sign-in is never refused for it).
 */
export const localeClaim = (claims: JWTPayload, name: string): string | null => {
  const v = claimText(claims, name, 35);
  if (v === null) return null;
  const r = tag.safeParse(v.replace(/_/g, "-"));
  return r.success ? r.data : null;
};
/** `email_verified` true (some providers send the string "true"). */
const emailVerified = (claims: JWTPayload) => claims.email_verified === true || claims.email_verified === "true";

/**
 * The user behind the upstream identity: its link; else (`link` and `create`) the existing account whose
 * confirmed address is the provider's verified email — linked at once when this browser is already signed
 * in to that very account, else returned as `linkUserUuid`, to be proven by its password on the page
 * shown on return (link-proof.ts), never by the address alone; else a new user (`create`); else refused.
 */
async function userFor(
  app: AppContext,
  provider: ProviderRow,
  claims: JWTPayload,
  sessionUserUuid: string | null,
): Promise<string | { linkUserUuid: string }> {
  const subject = String(claims.sub);
  const [link] = await app.db
    .select({ userUuid: upstreamOidcLinks.userUuid, tenantUuid: users.tenantUuid, method: users.authenticationMethod })
    .from(upstreamOidcLinks)
    .innerJoin(users, eq(users.uuid, upstreamOidcLinks.userUuid))
    .where(and(eq(upstreamOidcLinks.providerUuid, provider.uuid), eq(upstreamOidcLinks.subject, subject)));
  if (link) {
    // A tenant's provider speaks only for the users of that tenant and its sub-tenants.
    if (!(await isSubtenant(app.db, link.tenantUuid, provider.tenantUuid, app.topTenantUuid)))
      throw new UpstreamSignInRefused("This account cannot sign in here.", "tenant");
    // Users are restricted by their authentication method (the identity providers' rule, as SAML users).
    if ((await effectiveMethod(app.db, link.method, link.tenantUuid)) !== UPSTREAM_METHOD)
      throw new UpstreamSignInRefused(
        `This account does not sign in with ${provider.displayName}. Sign in another way, or ask your administrator.`,
        "method",
      );
    return link.userUuid;
  }
  const linked = await linkProvenAccount(app, provider, claims, subject, sessionUserUuid);
  if (linked) return linked;
  if (provider.provisioning !== "create")
    throw new UpstreamSignInRefused(
      `No account here is linked to this ${provider.displayName} identity. Ask your administrator, or sign in with your password.`,
      "no_link",
    );
  return provisionUser(app, provider, claims, subject);
}

/**
 * The account of the verified email, when the browser's session is that account's: linked at once. An
 * account of that email without such a session: `linkUserUuid`, awaiting its password (link-proof.ts).
 */
async function linkProvenAccount(
  app: AppContext,
  provider: ProviderRow,
  claims: JWTPayload,
  subject: string,
  sessionUserUuid: string | null,
): Promise<string | { linkUserUuid: string } | null> {
  const email = emailVerified(claims) ? claimText(claims, mappingOf(provider).email) : null;
  if (!email) return null;
  const [owner] = await app.db
    .select({ uuid: users.uuid, tenantUuid: users.tenantUuid })
    .from(emails)
    .innerJoin(users, eq(users.uuid, emails.userUuid))
    .where(and(sql`lower(${emails.address}) = ${email.toLowerCase()}`, eq(emails.confirmed, true)));
  if (!owner || !(await isSubtenant(app.db, owner.tenantUuid, provider.tenantUuid, app.topTenantUuid))) return null;
  if (owner.uuid !== sessionUserUuid) return { linkUserUuid: owner.uuid };
  await linkAccount(app, provider, subject, owner);
  return owner.uuid;
}

/**
 * The link made, the account's method now `oidc` (it signs in with the provider from now on, as a SAML
 * user with its IdP); evented and audited with the user as actor. The caller proved the account.
 */
export async function linkAccount(
  app: AppContext,
  provider: ProviderRow,
  subject: string,
  owner: { uuid: string; tenantUuid: string },
): Promise<void> {
  await inTransaction(app, async (tx) => {
    const [before] = await tx.select().from(users).where(eq(users.uuid, owner.uuid));
    await tx.insert(upstreamOidcLinks).values({ providerUuid: provider.uuid, subject, userUuid: owner.uuid });
    const [after] = await tx
      .update(users)
      .set({ authenticationMethod: UPSTREAM_METHOD })
      .where(eq(users.uuid, owner.uuid))
      .returning();
    await publishUserEvent(app, tx, "updated", after!);
    const entry = userAudit("user.oidc_link.create", after!, before!, after!);
    entry.changes!.push({ field: "oidc_link", old: null, new: `${provider.uuid}:${subject}` });
    await recordAudit(app, tx, { ...SYSTEM_ACTOR, userUuid: owner.uuid, tenantUuid: owner.tenantUuid }, entry);
  });
}

/** JIT provisioning: a user of the provider's tenant, with the mapped claims, method `oidc`, and its link. */
async function provisionUser(app: AppContext, provider: ProviderRow, claims: JWTPayload, subject: string) {
  const mapping = mappingOf(provider);
  // An address becomes the user's only when the provider vouches for it (never a login otherwise).
  const email = emailVerified(claims) ? claimText(claims, mapping.email) : null;
  const username = claimText(claims, mapping.username) ?? email;
  if (!username)
    throw new UpstreamSignInRefused(
      `${provider.displayName} did not say who you are (no ${mapping.username} or verified ${mapping.email}).`,
      "no_username",
    );
  try {
    return await inTransaction(app, async (tx) => {
      const user = await createUser(app, tx, provider.tenantUuid, {
        username,
        firstname: claimText(claims, mapping.firstname),
        lastname: claimText(claims, mapping.lastname),
        locale: localeClaim(claims, mapping.locale),
        email_address: email,
        purpose: "user",
        authentication_method: UPSTREAM_METHOD,
      });
      await tx.insert(upstreamOidcLinks).values({ providerUuid: provider.uuid, subject, userUuid: user.uuid });
      await recordAudit(app, tx, null, userAudit("user.provision", user, null, user));
      return user.uuid;
    });
  } catch (e) {
    if (e instanceof ApiError && e.status === 409)
      throw new UpstreamSignInRefused(
        `An account named ${username} already exists here. Sign in with your password, or ask your administrator to link it.`,
        "login_taken",
      );
    if (e instanceof ApiError && e.status === 400)
      throw new UpstreamSignInRefused(
        `${provider.displayName} sent a profile this service cannot use.`,
        "invalid_profile",
      );
    throw e;
  }
}

/**
 * Takes a completed sign-in, once (plugins/idp/oidc.ts): its user, the name that user logs in with, and
 * the provider's tenant. Null when unknown, used, expired, or awaiting the user's proof. The `amr` is the
 * one stored when the ID token was verified, weighed against the provider's setting as it is now.
 */
export async function consumeUpstreamLogin(app: AppContext, completion: string): Promise<UpstreamLoginOutcome | null> {
  const [row] = await app.db
    .delete(upstreamOidcLogins)
    .where(
      and(
        eq(upstreamOidcLogins.completionHash, sha256(completion)),
        isNotNull(upstreamOidcLogins.userUuid),
        gt(upstreamOidcLogins.expiresAt, new Date()),
      ),
    )
    .returning();
  if (!row?.userUuid) return null;
  const provider = await findProvider(app, row.providerUuid);
  if (!provider || provider.provisioning === "off") return null;
  const login = await loginNameOfUser(app, row.userUuid);
  if (!login) return null;
  return {
    userUuid: row.userUuid,
    login,
    providerTenantUuid: provider.tenantUuid,
    providerUuid: provider.uuid,
    upstreamMfa: upstreamMfaTrusted(provider, row.amr),
  };
}

/** The authorization request a completed sign-in resumes, without taking it (the login takes it). */
export async function completedLoginParams(
  app: AppContext,
  completion: string,
): Promise<Record<string, string> | null> {
  const [row] = await app.db
    .select({ params: upstreamOidcLogins.params })
    .from(upstreamOidcLogins)
    .where(
      and(
        eq(upstreamOidcLogins.completionHash, sha256(completion)),
        isNotNull(upstreamOidcLogins.userUuid),
        gt(upstreamOidcLogins.expiresAt, new Date()),
      ),
    );
  return row?.params ?? null;
}

/**
 * POST /0.1/token with `idp_token` (plugins/idp/oidc.ts), for applications that sign in natively at the
 * upstream provider: an ID token of a tenant's provider logs in the user linked to its `sub`. Only a token
 * signed by that provider, naming it as `iss`, whose `aud` is the provider's `client_id`, unexpired
 * (OIDC Core §3.1.3.7), and never twice: its hash is remembered until it expires. `tenantUuid` (the
 * body's `tenant_id`/`domain_name`) narrows the providers; a token that several tenants' providers would
 * accept, without it, is refused. Null on any refusal (the login answers its generic 401).
 */
export async function verifyUpstreamIdToken(
  app: AppContext,
  idToken: string,
  tenantUuid: string | null,
): Promise<UpstreamLoginOutcome | null> {
  let unverified: JWTPayload;
  try {
    unverified = decodeJwt(idToken);
  } catch {
    return null;
  }
  if (typeof unverified.iss !== "string") return null;
  const audiences = (Array.isArray(unverified.aud) ? unverified.aud : [unverified.aud]).filter(
    (a): a is string => typeof a === "string",
  );
  const accepted = (p: ProviderRow) => [p.clientId, ...p.nativeClientIds];
  const candidates = (await upstreamProvidersFor(app, unverified.iss, tenantUuid)).filter((p) =>
    accepted(p).some((id) => audiences.includes(id)),
  );
  if (candidates.length !== 1) return null;
  const provider = candidates[0]!;
  if (provider.provisioning === "off") return null;
  let payload: JWTPayload;
  try {
    payload = await verifyIdToken(app, provider, await metadataFor(app, provider), idToken, accepted(provider));
  } catch (e) {
    if (e instanceof UpstreamSignInRefused) return null;
    throw e;
  }
  // Once: the token's hash, until its expiry (jose checked `exp`).
  await app.db.delete(upstreamOidcTokenUses).where(lt(upstreamOidcTokenUses.expiresAt, new Date()));
  const [fresh] = await app.db
    .insert(upstreamOidcTokenUses)
    .values({ tokenHash: sha256(idToken), expiresAt: new Date((payload.exp! + CLOCK_TOLERANCE_SECONDS) * 1000) })
    .onConflictDoNothing()
    .returning();
  if (!fresh) {
    app.log.info("upstream ID token replayed", { provider_uuid: provider.uuid });
    return null;
  }
  let userUuid: string;
  try {
    const [link] = await app.db
      .select({ userUuid: upstreamOidcLinks.userUuid })
      .from(upstreamOidcLinks)
      .where(
        and(eq(upstreamOidcLinks.providerUuid, provider.uuid), eq(upstreamOidcLinks.subject, String(payload.sub))),
      );
    if (!link) return null;
    userUuid = link.userUuid;
  } catch {
    return null;
  }
  const login = await loginNameOfUser(app, userUuid);
  if (!login) return null;
  return {
    userUuid,
    login,
    providerTenantUuid: provider.tenantUuid,
    providerUuid: provider.uuid,
    upstreamMfa: upstreamMfaTrusted(provider, payload.amr),
  };
}

async function loginNameOfUser(app: AppContext, userUuid: string): Promise<string | null> {
  const [user] = await app.db
    .select({ username: users.username, email: emails.address })
    .from(users)
    .leftJoin(emails, and(eq(emails.userUuid, users.uuid), eq(emails.main, true), eq(emails.confirmed, true)))
    .where(eq(users.uuid, userUuid));
  return user?.username ?? user?.email ?? null;
}

/** The providers whose issuer is `iss` (an Entra ID template issuer matches its filled form), of `tenantUuid` when given. */
async function upstreamProvidersFor(app: AppContext, iss: string, tenantUuid: string | null): Promise<ProviderRow[]> {
  const rows = await app.db
    .select()
    .from(upstreamOidcProviders)
    .where(tenantUuid ? eq(upstreamOidcProviders.tenantUuid, tenantUuid) : undefined);
  const out: ProviderRow[] = [];
  for (const row of rows) {
    // GitHub issues no ID token: nothing it could sign logs in here.
    if (row.preset === "github") continue;
    if (row.issuer === iss) out.push(row);
    else if (row.preset === "entra" && /^https:\/\/login\.microsoftonline\.com\/[0-9a-f-]{36}\/v2\.0$/.test(iss))
      out.push(row);
  }
  return out;
}
