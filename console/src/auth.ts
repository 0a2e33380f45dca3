// Sign-in as a public OpenID Connect client: authorization code with PKCE S256 (RFC 7636 §4),
// through the hosted login page. The access token lives in sessionStorage (this tab only, gone
// when it closes), never localStorage; the ID token is not kept: who the user is and what they may
// do comes from GET /0.1/token/{token}, which the API answers for the token itself.

/** The console's client (src/services/console/client.ts keeps it registered). */
export const CLIENT_ID = "7e55e7a0-c045-4e00-8000-000000000001";
const TOKEN_KEY = "tessera-console.token";
const PENDING_KEY = "tessera-console.pending";

/** The service's base URL, prefix included (the page is at `{base}/0.1/console/`). */
export const BASE_URL = (() => {
  const i = location.pathname.indexOf("/0.1/console");
  return location.origin + (i >= 0 ? location.pathname.slice(0, i) : "");
})();
export const CONSOLE_URL = `${BASE_URL}/0.1/console/`;
const REDIRECT_URI = `${CONSOLE_URL}callback`;

export interface StoredToken {
  token: string;
  expiresAt: number;
}

export function storedToken(): StoredToken | null {
  const raw = sessionStorage.getItem(TOKEN_KEY);
  if (!raw) return null;
  const t = JSON.parse(raw) as StoredToken;
  if (t.expiresAt <= Date.now()) {
    sessionStorage.removeItem(TOKEN_KEY);
    return null;
  }
  return t;
}

export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
const randomString = () => base64url(crypto.getRandomValues(new Uint8Array(32)));

/** Off to the login page; the hash (the screen) comes back after sign-in. */
export async function signIn(): Promise<void> {
  // RFC 7636 §4.1: 256 bits of entropy; §4.2: S256.
  const verifier = randomString();
  const challenge = base64url(
    new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))),
  );
  const state = randomString();
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ verifier, state, hash: location.hash }));
  const query = new URLSearchParams({
    response_type: "code",
    client_id: CLIENT_ID,
    redirect_uri: REDIRECT_URI,
    scope: "openid",
    state,
    code_challenge: challenge,
    code_challenge_method: "S256",
  });
  location.assign(`${BASE_URL}/0.1/oidc/authorize?${query}`);
}

/**
 * On /callback: checks `state` (RFC 6749 §10.12) and `iss` (RFC 9207 §2.4), exchanges the code,
 * stores the token and goes back to the screen the user was on. Throws a readable message.
 */
export async function completeSignIn(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) ?? "null") as {
    verifier: string;
    state: string;
    hash: string;
  } | null;
  sessionStorage.removeItem(PENDING_KEY);
  history.replaceState(null, "", CONSOLE_URL + (pending?.hash ?? ""));
  if (params.get("error"))
    throw new Error(`The sign-in did not complete: ${params.get("error_description") ?? params.get("error")}`);
  if (!pending || params.get("state") !== pending.state)
    throw new Error("This sign-in answer does not belong to this tab. Sign in again.");
  const iss = params.get("iss");
  if (iss !== null && iss !== `${BASE_URL}/0.1/oidc`) throw new Error("The sign-in answer came from another issuer.");
  const res = await fetch(`${BASE_URL}/0.1/oidc/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: params.get("code") ?? "",
      redirect_uri: REDIRECT_URI,
      client_id: CLIENT_ID,
      code_verifier: pending.verifier,
    }),
  });
  const body = (await res.json().catch(() => ({}))) as {
    access_token?: string;
    expires_in?: number;
    error_description?: string;
    error?: string;
  };
  if (!res.ok || !body.access_token)
    throw new Error(`The sign-in failed: ${body.error_description ?? body.error ?? res.status}`);
  const stored: StoredToken = { token: body.access_token, expiresAt: Date.now() + (body.expires_in ?? 3600) * 1000 };
  sessionStorage.setItem(TOKEN_KEY, JSON.stringify(stored));
}

export const isCallback = () => location.pathname.endsWith("/0.1/console/callback");
