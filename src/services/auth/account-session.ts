// The account page's session cookie: the token of a sign-in made on that page, signed by the
// provider's current key (a JWS, RFC 7515) so that the cookie stands for that sign-in and nothing
// else. Holding a token is not signing in there: a token set by hand in a cookie (a stolen one, one
// issued before the user enrolled, an access token held by a third-party application) would
// otherwise reach the page's factor removals without the password and second step it asks.
import type { AppContext } from "../../boot/context.ts";
import { publicJwks, signingKey } from "../oidc/keys.ts";

/** Explicit typing (RFC 8725 §3.11): an ID token, signed by the same keys, is never taken for one. */
const TYP = "tessera-account+jws";

export async function sealAccountSession(app: AppContext, token: string, seconds: number): Promise<string> {
  const { CompactSign } = await import("jose");
  const key = await signingKey(app, "ES256");
  const exp = Math.floor(Date.now() / 1000) + seconds;
  return new CompactSign(new TextEncoder().encode(JSON.stringify({ token, exp })))
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: TYP })
    .sign(key.privateKey);
}

/** The token a cookie sealed by `sealAccountSession` holds, or null (forged, altered, expired, or not one). */
export async function openAccountSession(app: AppContext, sealed: string): Promise<string | null> {
  const { compactVerify, createLocalJWKSet } = await import("jose");
  const keys = createLocalJWKSet(await publicJwks(app)); // outside the try: an outage is not a bad cookie
  try {
    const { payload, protectedHeader } = await compactVerify(sealed, keys, { algorithms: ["ES256"] });
    if (protectedHeader.typ !== TYP) return null;
    const claims = JSON.parse(new TextDecoder().decode(payload)) as { token?: unknown; exp?: unknown };
    if (typeof claims.token !== "string" || typeof claims.exp !== "number") return null;
    return claims.exp > Date.now() / 1000 ? claims.token : null;
  } catch {
    return null;
  }
}
