// RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0 §2, §3): the request's checks. Until
// the client and its post-logout redirect URI are known to be right, nothing redirects (§3: the
// URI must have been registered, compared exactly, like redirect URIs).
import type { AppContext } from "../../boot/context.ts";
import { findClient, type ClientRow } from "./clients.ts";
import { publicJwks, SIGNING_ALGS } from "./keys.ts";

export interface IdTokenHint {
  sub: string;
  aud: string[];
  /** The browser session it was issued through (browser-session.ts), when it was. */
  sid: string | null;
}

/**
 * §2 `id_token_hint`: an ID token this provider issued — signed by one of its published keys
 * (retired ones included), with its issuer — even expired (§2: "the OP need not be the same
 * session"; an expired ID token still says who and for which client). Null when it is not one.
 */
export async function verifyIdTokenHint(app: AppContext, issuer: string, jwt: string): Promise<IdTokenHint | null> {
  try {
    const { compactVerify, createLocalJWKSet } = await import("jose"); // loaded at the first hint
    const keys = createLocalJWKSet(await publicJwks(app));
    const { payload } = await compactVerify(jwt, keys, { algorithms: [...SIGNING_ALGS] });
    const claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
    const aud = typeof claims.aud === "string" ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
    if (claims.iss !== issuer || typeof claims.sub !== "string" || !aud.every((a) => typeof a === "string"))
      return null;
    return { sub: claims.sub, aud: aud as string[], sid: typeof claims.sid === "string" ? claims.sid : null };
  } catch (e) {
    if ((e as { code?: string }).code?.startsWith("ERR_J")) return null; // jose's refusals
    if (e instanceof SyntaxError) return null;
    throw e; // an outage reading the keys is not a bad hint
  }
}

export type LogoutCheck =
  | { kind: "page_error"; message: string }
  | {
      kind: "ok";
      hint: IdTokenHint | null;
      client: ClientRow | null;
      /** A registered post-logout redirect URI, or null: the "signed out" page. */
      redirectUri: string | null;
      state: string | null;
    };

const MAX_PARAM = 8_192;

export async function checkLogoutRequest(
  app: AppContext,
  issuer: string,
  p: Record<string, string | undefined>,
): Promise<LogoutCheck> {
  const bad = (message: string): LogoutCheck => ({ kind: "page_error", message });
  for (const v of Object.values(p)) if ((v?.length ?? 0) > MAX_PARAM || v?.includes("\0")) return bad(MALFORMED);
  let hint: IdTokenHint | null = null;
  if (p.id_token_hint !== undefined) {
    hint = await verifyIdTokenHint(app, issuer, p.id_token_hint);
    if (!hint) return bad("The application sent a sign-out request this service did not issue.");
  }
  // §2: `client_id`, when both are sent, must be an audience of the ID token.
  if (p.client_id !== undefined && hint && !hint.aud.includes(p.client_id)) return bad(MALFORMED);
  const clientId = p.client_id ?? (hint?.aud.length === 1 ? hint.aud[0] : undefined);
  let client: ClientRow | null = null;
  if (clientId !== undefined) {
    client = await findClient(app, clientId);
    if (!client) return bad("The application that sent you here is not known.");
  }
  const redirectUri = p.post_logout_redirect_uri ?? null;
  // §3: exactly a URI registered for that client; never a redirect to anything else.
  if (redirectUri !== null && !client?.postLogoutRedirectUris.includes(redirectUri))
    return bad("The application asked to send you to an address it has not registered.");
  return { kind: "ok", hint, client, redirectUri, state: p.state ?? null };
}

const MALFORMED = "The sign-out request is malformed.";
