// The error answer of the token, introspection and revocation endpoints: RFC 6749 §5.2's
// `{error, error_description}`, not the Tessera error body, because OAuth clients parse it.
export class OAuthError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 413 | 429 | 500 | 503,
    readonly error: string,
    readonly description: string,
    /** Headers the answer carries besides (RFC 9449 §8: `DPoP-Nonce`). */
    readonly headers?: Record<string, string>,
  ) {
    super(description);
  }
}

/** RFC 6749 §5.2: a failed client authentication is 401 `invalid_client`. */
export const invalidClient = () => new OAuthError(401, "invalid_client", "client authentication failed");
export const invalidGrant = (description: string) => new OAuthError(400, "invalid_grant", description);

/**
 * The user's session cap (`max_user_concurrent_sessions`) refused the new session a grant needs:
 * the authorization server denies it (RFC 6749 §4.1.2.1 `access_denied`), with the REST login's 429,
 * and says why — retrying is useless until one of the user's sessions ends.
 */
export const sessionCapReached = () =>
  new OAuthError(
    429,
    "access_denied",
    "the user has reached the session cap (max_user_concurrent_sessions): a session must end first",
  );
