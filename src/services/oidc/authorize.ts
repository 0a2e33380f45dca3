// The authorization request (OIDC Core §3.1.2.1, RFC 6749 §4.1.1, RFC 7636 §4.3), checked the
// same way when the page is shown and when its form comes back. Until the client and its redirect
// URI are known to be right, an error is shown on the page and never redirected (RFC 6749
// §4.1.2.1, §10.15 open redirector); after that, errors go back to the client.
import { scopesBeyond } from "./acl-scope.ts";
import type { AppContext } from "../../boot/context.ts";
import { findClient, type ClientRow } from "./clients.ts";
import { redirectUriMatches } from "./redirect-uris.ts";

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
}

/** OIDC Core §3.1.2.1 prompt values (`select_account` shows the form: there is no account chooser). */
const PROMPTS = new Set(["none", "login", "consent", "select_account"]);

export type AuthorizeCheck =
  | { kind: "page_error"; message: string }
  | { kind: "redirect_error"; redirectUri: string; error: string; description: string; state: string | null }
  | { kind: "ok"; client: ClientRow; request: AuthorizationRequest };

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
  // OIDC Core §3.1.2.1: the languages of the pages, carried through every step (docs/languages.md).
  "ui_locales",
] as const;

const MAX_PARAM = 2_048;
/** RFC 7636 §4.2: BASE64URL(SHA-256) of a verifier is 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export async function checkAuthorizationRequest(
  app: AppContext,
  p: Record<string, string | undefined>,
): Promise<AuthorizeCheck> {
  for (const name of REQUEST_PARAMS)
    if ((p[name]?.length ?? 0) > MAX_PARAM || p[name]?.includes("\0"))
      return { kind: "page_error", message: "The sign-in request is malformed." };
  const clientId = p.client_id ?? "";
  const client = await findClient(app, clientId);
  if (!client || !client.grantTypes.includes("authorization_code"))
    return { kind: "page_error", message: "The application that sent you here is not known." };
  // RFC 6749 §3.1.2.3, RFC 9700 §2.1: the redirect URI must equal a registered one, character for
  // character, but for a loopback one's port (RFC 8252 §7.3).
  const redirectUri = p.redirect_uri ?? "";
  if (!redirectUriMatches(client.redirectUris, redirectUri))
    return {
      kind: "page_error",
      message: "The application sent you here with a return address it has not registered.",
    };
  const state = p.state ?? null;
  const fail = (error: string, description: string): AuthorizeCheck => ({
    kind: "redirect_error",
    redirectUri,
    error,
    description,
    state,
  });
  // OIDC Core §6: request objects are not supported.
  if (p.request !== undefined) return fail("request_not_supported", "request objects are not supported");
  if (p.request_uri !== undefined) return fail("request_uri_not_supported", "request_uri is not supported");
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
  return {
    kind: "ok",
    client,
    request: {
      clientId: client.clientId,
      redirectUri,
      scope,
      state,
      nonce: p.nonce ?? null,
      codeChallenge: challenge,
      prompt,
      maxAge,
    },
  };
}

/** The redirect of an authorization response or error (RFC 6749 §4.1.2, RFC 9207 `iss`). */
export function authorizationRedirect(redirectUri: string, params: Record<string, string | null>): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== null) url.searchParams.set(k, v);
  return url.toString();
}
