// Token introspection (RFC 7662) and revocation (RFC 7009) for authenticated clients. Introspection
// answers only about users of the client's tenant and its sub-tenants, and for the client's own
// refresh tokens; a first-party client about every Tessera token there, any other client only about
// the access tokens issued to it (§4: the server decides who may introspect what). Anything else is
// `{active: false}`, the same answer as an unknown token (§2.2).
import type { AppContext } from "../../boot/context.ts";
import { isUuid } from "../../domain/validate.ts";
import { revokeToken } from "../auth/sessions.ts";
import { findValidToken, isTokenShaped } from "../auth/tokens.ts";
import { looksLikeJwt, resolveAccessJwt } from "./access-jwt.ts";
import type { ClientRow } from "./clients.ts";
import { clientActor, findRefreshToken, grantOfToken, type RequestOrigin, revokeFamily } from "./grants.ts";

const INACTIVE = { active: false } as const;
const INACTIVE_JSON = JSON.stringify(INACTIVE);

export async function introspectToken(
  app: AppContext,
  client: ClientRow,
  token: string,
  issuer: string,
  hint?: string,
): Promise<Record<string, unknown>> {
  // An RFC 9068 JWT (a cheap shape test first: opaque tokens never reach the JWT code).
  if (looksLikeJwt(token)) return (await introspectJwt(app, client, token, issuer)) ?? INACTIVE;
  // §2.1: the hint only orders the look-ups; an access token is tried first unless told otherwise.
  if (hint === "refresh_token" || !isTokenShaped(token))
    return (
      (await introspectRefreshToken(app, client, token, issuer)) ??
      (await introspectAccessToken(app, client, token, issuer)) ??
      INACTIVE
    );
  return (
    (await introspectAccessToken(app, client, token, issuer)) ??
    (await introspectRefreshToken(app, client, token, issuer)) ??
    INACTIVE
  );
}

/**
 * The introspection answer as JSON, for the hot path (http/fast-introspection.ts). What it says of a
 * valid access token never changes while the token lives (its record and grant are fixed), so the
 * last answer is kept on the cached token, for the same client and issuer; every request still
 * finds the token valid first (expiry, revocation evict it from the cache).
 */
export async function introspectionJson(
  app: AppContext,
  client: ClientRow,
  token: string,
  issuer: string,
  hint?: string,
): Promise<string> {
  const tok = hint !== "refresh_token" && isTokenShaped(token) ? await findValidToken(app, token) : null;
  const memo = tok?.introspected;
  // The client's reach is part of the answer: a client made third-party since then asks again.
  if (memo && memo.clientId === client.clientId && memo.firstParty === client.firstParty && memo.issuer === issuer)
    return memo.json;
  const answer = await introspectToken(app, client, token, issuer, hint);
  if (answer === INACTIVE) return INACTIVE_JSON;
  const json = JSON.stringify(answer);
  if (tok && answer.token_type === "Bearer")
    tok.introspected = { clientId: client.clientId, firstParty: client.firstParty, issuer, json };
  return json;
}

/**
 * A JWT access token (RFC 9068) is answered as the Tessera token it stands for — inactive once that
 * is revoked — with the JWT's own audience, scope, expiry and `act` (RFC 8693 §4.1), under the same
 * rules of who may learn of it.
 */
async function introspectJwt(
  app: AppContext,
  client: ClientRow,
  jwt: string,
  issuer: string,
): Promise<Record<string, unknown> | null> {
  const resolved = await resolveAccessJwt(app, jwt);
  if (!resolved) return null;
  const answer = await introspectAccessToken(app, client, resolved.anchorUuid, issuer);
  if (!answer || answer === INACTIVE) return null;
  const { claims } = resolved;
  const out: Record<string, unknown> = { ...answer, exp: Math.min(Number(answer.exp), resolved.exp), aud: claims.aud };
  for (const name of ["scope", "jti", "act", "sub", "client_id"] as const)
    if (claims[name] !== undefined) out[name] = claims[name];
  return out;
}

/** A refresh token is described to the client it was issued to only (RFC 7662 §4: no token scanning). */
async function introspectRefreshToken(
  app: AppContext,
  client: ClientRow,
  token: string,
  issuer: string,
): Promise<Record<string, unknown> | null> {
  const rt = await findRefreshToken(app, token);
  if (!rt || rt.clientId !== client.clientId || rt.rotatedAt !== null) return null;
  if (rt.expiresAt && rt.expiresAt.getTime() <= Date.now()) return null;
  const answer: Record<string, unknown> = {
    active: true,
    token_type: "refresh_token",
    scope: rt.scope,
    client_id: rt.clientId,
    sub: rt.userUuid,
    iat: Math.floor(rt.createdAt.getTime() / 1000),
    iss: issuer,
  };
  if (rt.expiresAt) answer.exp = Math.floor(rt.expiresAt.getTime() / 1000);
  return answer;
}

/** An access token's answer; `INACTIVE` when it is one the client may not learn about; null when it is none. */
async function introspectAccessToken(
  app: AppContext,
  client: ClientRow,
  token: string,
  issuer: string,
): Promise<Record<string, unknown> | null> {
  if (!isTokenShaped(token)) return null;
  const tok = await findValidToken(app, token);
  if (!tok) return null;
  // RFC 7662 §4: a third-party client, maybe a resource server of someone else's, learns only of
  // the tokens issued to it (the grant is cached on the token: no read on the hot path).
  const own = client.firstParty ? undefined : await grantOfToken(app, token, tok);
  if (own !== undefined && own?.clientId !== client.clientId) return INACTIVE;
  const tenantUuid = typeof tok.metadata.tenant_uuid === "string" ? tok.metadata.tenant_uuid : null;
  if (!tenantUuid || !(await app.tenantTree.isSubtenant(app.db, tenantUuid, client.tenantUuid))) return INACTIVE;
  const grant = own ?? (await grantOfToken(app, token, tok));
  // RFC 7662 §2.2 members; `tenant_uuid` and `session_uuid` are Tessera's.
  const answer: Record<string, unknown> = {
    active: true,
    token_type: "Bearer",
    exp: tok.expireT,
    iat: tok.issuedT,
    iss: issuer,
    tenant_uuid: tenantUuid,
    session_uuid: tok.sessionUuid,
  };
  if (isUuid(tok.authId)) answer.sub = tok.authId;
  if (grant) {
    answer.scope = grant.scope.join(" ");
    answer.client_id = grant.clientId;
    // A client's own token (client credentials): its subject is the client (RFC 9068 §2.2 does so).
    if (grant.userUuid === null) answer.sub = grant.clientId;
    // RFC 8693 §4.1: who acts for the subject (a token exchange's delegation or impersonation).
    const act = (grant as { act?: unknown }).act;
    if (act) answer.act = act;
    // RFC 9449 §6.2: a DPoP-bound token names its key (the resource checks the proof against it).
    if (grant.jkt) {
      answer.token_type = "DPoP";
      answer.cnf = { jkt: grant.jkt };
    }
  }
  return answer;
}

/**
 * RFC 7009 §2.1: a client revokes the tokens issued to it. An access token goes with its session; a
 * refresh token takes its whole grant (the family, and every session issued from it — §2.1 says the
 * server SHOULD). Anything else — unknown, expired, another client's, a plain Tessera token — is
 * answered the same 200 (§2.2) and left alone.
 */
export async function revokeClientToken(
  app: AppContext,
  client: ClientRow,
  token: string,
  hint: string | undefined,
  origin: RequestOrigin,
): Promise<void> {
  const asRefresh = async () => {
    const rt = await findRefreshToken(app, token);
    if (rt?.clientId !== client.clientId) return false;
    await revokeFamily(app, rt.familyUuid, "revoked by its client (RFC 7009)", clientActor(origin, client.tenantUuid));
    return true;
  };
  if (hint === "refresh_token" && (await asRefresh())) return;
  // A JWT access token (RFC 9068) is revoked as the Tessera token it stands for.
  const uuid = looksLikeJwt(token) ? ((await resolveAccessJwt(app, token))?.anchorUuid ?? "") : token;
  if (isTokenShaped(uuid)) {
    const grant = await grantOfToken(app, uuid);
    if (grant?.clientId === client.clientId)
      return revokeToken(app, uuid, { address: origin.remoteAddr, userAgent: origin.userAgent });
  }
  if (hint !== "refresh_token") await asRefresh();
}
