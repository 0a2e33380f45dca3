// The authorization request (OIDC Core §3.1.2.1, RFC 6749 §4.1.1, RFC 7636 §4.3), checked the
// same way when the page is shown and when its form comes back. Until the client and its redirect
// URI are known to be right, an error is shown on the page and never redirected (RFC 6749
// §4.1.2.1, §10.15 open redirector); after that, errors go back to the client. A request may come
// pushed (RFC 9126: `request_uri`, pushed-requests.ts) or as a signed request object (RFC 9101:
// `request`, request-object.ts); either way it is checked here, once expanded.
import { scopesBeyond } from "./acl-scope.ts";
import type { AppContext } from "../../boot/context.ts";
import { findClient, type ClientRow } from "./clients.ts";
import { verifyIdTokenHint } from "./logout.ts";
import { OAuthError } from "./oauth-error.ts";
import { openPushedRequest, storePushedRequest } from "./pushed-requests.ts";
import { redirectUriMatches } from "./redirect-uris.ts";
import { RequestObjectError, requestObjectParams } from "./request-object.ts";
import { resourceTarget } from "./access-jwt.ts";

export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  scope: string[];
  state: string | null;
  nonce: string | null;
  codeChallenge: string | null;
  /** OIDC Core §3.1.2.1 `prompt`, space-separated. */
  prompt: string[];
  /** OIDC Core §3.1.2.1 `max_age`: seconds since the user's last real authentication, at most. */
  maxAge: number | null;
  /** RFC 9126: the pushed request's request_uri, spent when the code is issued. */
  requestUri?: string | null;
  /** OIDC Core §3.1.2.1 `login_hint`: prefills the login form. */
  loginHint?: string | null;
  /** OIDC Core §3.1.2.1 `id_token_hint`: the user the client expects (its `sub`), verified. */
  hintedSub?: string | null;
  /** RFC 8707 §2.1 `resource`: the resource the code's access token is for (the token request names it or nothing). */
  resource?: string | null;
}

/** OIDC Core §3.1.2.1 prompt values (`select_account` shows the form: there is no account chooser). */
const PROMPTS = new Set(["none", "login", "consent", "select_account"]);

export type AuthorizeCheck =
  | {
      kind: "page_error";
      message: string;
      /** For the pushed authorization endpoint (RFC 9126 §2.3): the OAuth error code and its description. */
      error?: string;
      description?: string;
    }
  | { kind: "redirect_error"; redirectUri: string; error: string; description: string; state: string | null }
  | {
      kind: "ok";
      client: ClientRow;
      request: AuthorizationRequest;
      /** The request's parameters once a pushed request or a request object is expanded. */
      resolved: Record<string, string>;
    };

/** The parameters the request carries; kept as hidden fields of the login form. */
export const REQUEST_PARAMS = [
  "client_id",
  "redirect_uri",
  "response_type",
  "scope",
  "state",
  "nonce",
  "code_challenge",
  "code_challenge_method",
  "prompt",
  "max_age",
  "request",
  "request_uri",
  "response_mode",
  "login_hint",
  "id_token_hint",
  // OIDC Core §3.1.2.1: the languages of the pages, carried through every step (docs/languages.md).
  "ui_locales",
  "resource",
] as const;

const MAX_PARAM = 2_048;
/** A signed request object or an ID token is longer than any other parameter. */
const MAX_JWT_PARAM = 16_384;
/** RFC 7636 §4.2: BASE64URL(SHA-256) of a verifier is 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

const tooLong = (name: string, value: string) =>
  value.length > (name === "request" || name === "id_token_hint" ? MAX_JWT_PARAM : MAX_PARAM);

export interface CheckOptions {
  /** The pushed authorization endpoint's check (RFC 9126 §2.1): no request_uri, and required pushing is being done. */
  pushing?: boolean;
}

const UNKNOWN_CLIENT = "The application that sent you here is not known.";
const EXPIRED_REQUEST =
  "The sign-in request has expired or was already used. Go back to the application and start again.";

/**
 * `issuer` (the provider's, from the request) is what a request object's `aud` and an
 * `id_token_hint`'s `iss` must name; without it, neither is checked against it.
 */
export async function checkAuthorizationRequest(
  app: AppContext,
  raw: Record<string, string | undefined>,
  issuer?: string,
  opts: CheckOptions = {},
): Promise<AuthorizeCheck> {
  for (const name of REQUEST_PARAMS) {
    const v = raw[name];
    if (v !== undefined && (tooLong(name, v) || v.includes("\0")))
      return { kind: "page_error", message: "The sign-in request is malformed." };
  }
  const client = await findClient(app, raw.client_id ?? "");
  if (!client || !client.grantTypes.includes("authorization_code"))
    return {
      kind: "page_error",
      message: UNKNOWN_CLIENT,
      error: "unauthorized_client",
      description: "this client may not use the authorization code grant",
    };
  let p: Record<string, string | undefined> = raw;
  let requestUri: string | null = null;
  // RFC 9126 §4: a pushed request, bound to its client; nothing outside it counts but client_id.
  if (raw.request_uri !== undefined) {
    if (opts.pushing)
      return {
        kind: "page_error",
        message: EXPIRED_REQUEST,
        error: "invalid_request",
        description: "request_uri cannot be pushed",
      };
    const pushed = await openPushedRequest(app, client.clientId, raw.request_uri);
    if (!pushed)
      return {
        kind: "page_error",
        message: EXPIRED_REQUEST,
        error: "invalid_request_uri",
        description: "request_uri is unknown, expired, used or another client's",
      };
    p = { ...pushed, client_id: client.clientId };
    requestUri = raw.request_uri;
  }
  // RFC 9101 §5, §6: a request object signed by the client's keys; only its parameters count.
  if (p.request !== undefined) {
    try {
      p = { ...(await requestObjectParams(app, client, p.request, issuer)), client_id: client.clientId };
    } catch (e) {
      if (!(e instanceof RequestObjectError)) throw e;
      // The redirect URI of the outer request, when it is registered, may receive the error (§6.3).
      const outer = raw.redirect_uri;
      if (outer !== undefined && redirectUriMatches(client.redirectUris, outer))
        return {
          kind: "redirect_error",
          redirectUri: outer,
          error: e.error,
          description: e.message,
          state: raw.state ?? null,
        };
      return {
        kind: "page_error",
        message: "The application sent a sign-in request this service cannot read.",
        error: e.error,
        description: e.message,
      };
    }
  }
  // RFC 6749 §3.1.2.3, RFC 9700 §2.1: the redirect URI must equal a registered one, character for
  // character, but for a loopback one's port (RFC 8252 §7.3).
  const redirectUri = p.redirect_uri ?? "";
  if (!redirectUriMatches(client.redirectUris, redirectUri))
    return {
      kind: "page_error",
      message: "The application sent you here with a return address it has not registered.",
      error: "invalid_request",
      description: "redirect_uri is not registered for this client",
    };
  const state = p.state ?? null;
  const fail = (error: string, description: string): AuthorizeCheck => ({
    kind: "redirect_error",
    redirectUri,
    error,
    description,
    state,
  });
  // RFC 9126 §6: this client's requests come pushed, or not at all.
  if (client.requirePushedAuthorizationRequests && requestUri === null && !opts.pushing)
    return fail("invalid_request", "this client must use pushed authorization requests (RFC 9126)");
  if (p.response_mode !== undefined && p.response_mode !== "query")
    return fail("invalid_request", "only response_mode=query is supported");
  // Only the code flow: implicit and hybrid are not offered (RFC 9700 §2.1.2).
  if (p.response_type !== "code") return fail("unsupported_response_type", "only response_type=code is supported");
  const scope = [...new Set((p.scope ?? "").split(" ").filter(Boolean))];
  // OIDC Core §3.1.2.1: `openid` makes it an OpenID Connect request; this provider serves only those.
  if (!scope.includes("openid")) return fail("invalid_scope", "the openid scope is required");
  const refused = scopesBeyond(client.scopes, scope);
  if (refused.length) return fail("invalid_scope", `scope not allowed for this client: ${refused.join(" ")}`);
  // RFC 7636 §4.3 and RFC 9700 §2.1.1: S256 only (`plain` refused); public clients must use it.
  const challenge = p.code_challenge ?? null;
  if (challenge !== null) {
    if ((p.code_challenge_method ?? "plain") !== "S256")
      return fail("invalid_request", "code_challenge_method must be S256");
    if (!S256_CHALLENGE.test(challenge)) return fail("invalid_request", "code_challenge is not an S256 challenge");
  } else if (client.clientType === "public") {
    return fail("invalid_request", "PKCE (code_challenge with S256) is required for public clients");
  }
  const prompt = [...new Set((p.prompt ?? "").split(" ").filter(Boolean))];
  if (prompt.some((v) => !PROMPTS.has(v))) return fail("invalid_request", "unknown prompt value");
  // OIDC Core §3.1.2.1: `none` with any other value is an error.
  if (prompt.includes("none") && prompt.length > 1)
    return fail("invalid_request", "prompt=none cannot be combined with other values");
  let maxAge: number | null = null;
  if (p.max_age !== undefined) {
    if (!/^\d{1,10}$/.test(p.max_age)) return fail("invalid_request", "max_age must be a non-negative integer");
    maxAge = Number(p.max_age);
  }
  // OIDC Core §3.1.2.1 `id_token_hint`: an ID token this provider issued (expired ones too), for this client.
  let hintedSub: string | null = null;
  if (p.id_token_hint !== undefined && issuer !== undefined) {
    const hint = await verifyIdTokenHint(app, issuer, p.id_token_hint);
    if (!hint || !hint.aud.includes(client.clientId))
      return fail("invalid_request", "id_token_hint is not an ID token this provider issued to this client");
    hintedSub = hint.sub;
  }
  // RFC 8707 §2.1: the resource must be one the token endpoint would accept (a resource of the
  // client's tenant, or Tessera's own API); remembered with the code (sign-in.ts issueCode).
  const resource = p.resource ?? null;
  if (resource !== null) {
    try {
      await resourceTarget(app, client, resource, issuer ?? "");
    } catch (e) {
      if (!(e instanceof OAuthError)) throw e;
      return fail("invalid_target", e.description);
    }
  }
  // What a push keeps: the request's own parameters (any other is ignored, as at the endpoint).
  const resolved: Record<string, string> = {};
  for (const name of REQUEST_PARAMS)
    if (p[name] !== undefined && name !== "request" && name !== "request_uri") resolved[name] = p[name]!;
  return {
    kind: "ok",
    client,
    resolved,
    request: {
      clientId: client.clientId,
      redirectUri,
      scope,
      state,
      nonce: p.nonce ?? null,
      codeChallenge: challenge,
      prompt,
      maxAge,
      requestUri,
      loginHint: p.login_hint ?? null,
      hintedSub,
      resource,
    },
  };
}

/** Parameters of client authentication (RFC 6749 §2.3, RFC 7521 §4.2): never part of a pushed request. */
const CLIENT_AUTH_PARAMS = new Set(["client_secret", "client_assertion", "client_assertion_type"]);

/**
 * RFC 9126 §2.1: the authenticated client's request, checked as the authorization endpoint checks
 * it (a request object verified and expanded), kept under a new single-use request_uri.
 */
export async function pushAuthorizationRequest(
  app: AppContext,
  client: ClientRow,
  form: Record<string, string | undefined>,
  issuer: string,
): Promise<{ request_uri: string; expires_in: number }> {
  // §2.1: "The request_uri authorization request parameter MUST NOT be provided in this case".
  if (form.request_uri !== undefined) throw new OAuthError(400, "invalid_request", "request_uri cannot be pushed");
  const params: Record<string, string> = {};
  for (const [k, v] of Object.entries(form)) if (v !== undefined && !CLIENT_AUTH_PARAMS.has(k)) params[k] = v;
  params.client_id = client.clientId;
  const check = await checkAuthorizationRequest(app, params, issuer, { pushing: true });
  if (check.kind === "page_error")
    throw new OAuthError(400, check.error ?? "invalid_request", check.description ?? check.message);
  if (check.kind === "redirect_error") throw new OAuthError(400, check.error, check.description);
  return storePushedRequest(app, client.clientId, check.resolved);
}

/** The redirect of an authorization response or error (RFC 6749 §4.1.2, RFC 9207 `iss`). */
export function authorizationRedirect(redirectUri: string, params: Record<string, string | null>): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== null) url.searchParams.set(k, v);
  return url.toString();
}
