// Sign-ins where the tenant's identity provider vouched for the user and no password was typed here:
// SAML (plugins/idp/saml.ts, `saml`) and the tenant's upstream OpenID provider (plugins/idp/oidc.ts,
// `oidc`: the hosted page's "Continue with …" and POST /0.1/token `idp_token`). An administrator's
// "must change the password" (services/auth/password-change.ts) has nothing to ask of them: it neither
// stops the hosted page for a new password nor narrows the token. The second factor and the tenant's
// MFA requirement still apply, as after a password.

/** The identity providers' authentication methods (and the hosted page's first-factor `amr` values) that vouch. */
const VOUCHING_METHODS: ReadonlySet<string> = new Set(["saml", "oidc"]);

/** Whether a sign-in by these methods (an IdP's method, or the first factor's `amr`) typed no password here. */
export const vouchedByIdentityProvider = (methods: readonly string[]): boolean =>
  methods.some((m) => VOUCHING_METHODS.has(m));
