// Whether an upstream provider's `amr` (RFC 8176 §2, OIDC Core §2) shows a multi-factor authentication,
// for a provider configured to be trusted with it (`trust_amr`, docs/federation.md "Multi-factor"): then
// the tenant's MFA requirement counts as met by the upstream and Tessera asks no second factor of its own.
// Only the `amr` of an ID token Tessera verified itself is read here, never anything the browser sent.

/** RFC 8176 §2 methods by factor class (NIST SP 800-63B §5.1: something you know, have, are). */
const FACTOR_CLASS: Readonly<Record<string, "know" | "have" | "are">> = {
  pwd: "know",
  pin: "know",
  kba: "know",
  otp: "have",
  hwk: "have",
  swk: "have",
  sms: "have",
  tel: "have",
  sc: "have",
  pop: "have",
  fpt: "are",
  face: "are",
  iris: "are",
  retina: "are",
  vbm: "are",
};
// Not a factor here: `user` (RFC 8176: a user *presence* test — a security key's touch is `hwk user` and
// proves one factor only), `geo`, `rba`, `mca`, `wia` (context or risk signals, not something proven).
// No single method counts on its own, not even `hwk` or `sc`: the `amr` of a hardware key does not say
// whether its PIN or biometric user verification was checked; a provider that checked it says so with
// `mfa` or with that second method (`hwk pin`, `sc pin`, `swk fpt`).

/** At most this many methods are kept from an ID token (RFC 8176 lists about twenty). */
const MAX_METHODS = 16;

/** The `amr` claim as stored with a sign-in under way: its short strings only, else null. */
export function amrOf(claim: unknown): string[] | null {
  if (!Array.isArray(claim)) return null;
  const methods = claim.filter((m): m is string => typeof m === "string" && m.length > 0 && m.length <= 32);
  return methods.length ? [...new Set(methods)].slice(0, MAX_METHODS) : null;
}

/** True when `amr` says `mfa` (RFC 8176 §2), or names methods of two distinct factor classes. */
export function isMultiFactor(amr: readonly string[] | null | undefined): boolean {
  if (!amr?.length) return false;
  if (amr.includes("mfa")) return true;
  const classes = new Set(amr.map((m) => FACTOR_CLASS[m]).filter(Boolean));
  return classes.size >= 2;
}

/** The `amr` of Tessera's own ID token after a sign-in whose MFA a trusted upstream provider vouched for. */
export const UPSTREAM_MFA_AMR = ["oidc", "mfa"] as const;

/**
 * A sign-in continued later (single sign-on of its browser session, an OpenID refresh) whose MFA
 * requirement the upstream met: exactly `oidc mfa` (after Tessera's own second factor it is `oidc otp
 * mfa`, and the user's factors are then checked again as for any login).
 */
export const metUpstream = (amr: readonly string[] | null | undefined): boolean =>
  amr?.length === UPSTREAM_MFA_AMR.length && UPSTREAM_MFA_AMR.every((m) => amr.includes(m));

/** The upstream vouched for a multi-factor authentication, and its provider is trusted to say so. */
export const upstreamMfaTrusted = (provider: { trustAmr: boolean }, amr: unknown): boolean =>
  provider.trustAmr && isMultiFactor(amrOf(amr));
