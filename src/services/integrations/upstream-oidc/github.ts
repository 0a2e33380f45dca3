// The `github` preset (docs/federation.md "GitHub"): GitHub and GitHub Enterprise Server are plain OAuth 2.0
// (RFC 6749) with no ID token and no discovery, so the endpoints are GitHub's fixed ones and the identity
// comes from its REST API: `/user` (the numeric `id`, the `login`, the `name`) and `/user/emails` (only the
// entries GitHub marked `verified`, the primary first). The subject is the numeric `id`: a login can be
// renamed and then taken by someone else, the id never changes. Every call goes through the outbound guard.
import type { JWTPayload } from "jose";
import type { AppContext } from "../../../boot/context.ts";
import { fetchJson, UpstreamUnavailable } from "./discovery.ts";
import { githubEndpoints } from "./github-endpoints.ts";
import type { ProviderRow } from "./providers.ts";
import { UpstreamSignInRefused } from "./refused.ts";
import { requestTokens } from "./token-request.ts";

interface GithubEmail {
  email?: unknown;
  primary?: unknown;
  verified?: unknown;
}

/**
 * The code exchanged (client_secret_post with the PKCE verifier, as GitHub documents), then the user and its
 * emails read, as the claims an OpenID provider would have sent (`sub`, `preferred_username`, `email` with
 * `email_verified`, `given_name`/`family_name`), so that claim mapping and linking treat both alike.
 */
export async function githubClaims(
  app: AppContext,
  provider: ProviderRow,
  code: string,
  verifier: string,
  redirectUri: string,
): Promise<JWTPayload> {
  const endpoints = githubEndpoints(provider.issuer);
  const tokens = await requestTokens(
    app,
    provider,
    endpoints.token,
    { grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: verifier },
    "post",
    (body) => typeof body.access_token === "string" && body.access_token !== "",
  );
  const headers = {
    Authorization: `Bearer ${tokens.access_token as string}`,
    Accept: "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
    // GitHub refuses API requests without a User-Agent.
    "User-Agent": "Tessera",
  };
  let user: Record<string, unknown>;
  let list: unknown;
  try {
    user = ((await fetchJson(app, `${endpoints.api}/user`, { headers })) ?? {}) as Record<string, unknown>;
    list = await fetchJson(app, `${endpoints.api}/user/emails`, { headers });
  } catch (e) {
    if (!(e instanceof UpstreamUnavailable)) throw e;
    app.log.info("github API refused", { provider_uuid: provider.uuid, error: e.message });
    throw new UpstreamSignInRefused(`${provider.displayName} did not answer for your profile.`, "userinfo");
  }
  if (typeof user.id !== "number" || !Number.isSafeInteger(user.id) || user.id <= 0)
    throw new UpstreamSignInRefused(`${provider.displayName} sent a profile this service cannot use.`, "sub");
  const verified = (Array.isArray(list) ? (list as GithubEmail[]) : []).filter(
    (e) => e && typeof e.email === "string" && e.verified === true,
  );
  verified.sort((a, b) => Number(b.primary === true) - Number(a.primary === true));
  const claims: JWTPayload = { sub: String(user.id) };
  if (typeof user.login === "string") claims.preferred_username = user.login;
  if (verified[0]) {
    claims.email = verified[0].email as string;
    claims.email_verified = true;
  }
  if (typeof user.name === "string" && user.name.trim() !== "") {
    // GitHub has one `name`: split at its last space, as Keycloak's GitHub broker does; one word is a first name.
    const name = user.name.trim();
    const cut = name.lastIndexOf(" ");
    claims.name = name;
    claims.given_name = cut > 0 ? name.slice(0, cut).trim() : name;
    if (cut > 0) claims.family_name = name.slice(cut + 1);
  }
  return claims;
}
