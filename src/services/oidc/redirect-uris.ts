// Redirect URIs: what may be registered (RFC 6749 §3.1.2, RFC 8252 §7, RFC 9700 §2.1 and §4.1) and
// how a presented one matches a registered one (RFC 6749 §3.1.2.3: simple string comparison, save
// the port of a loopback redirect URI, RFC 8252 §7.3). Pure functions: no I/O.

/** A registration rule a URI breaks, in the error body's terms. */
export interface RedirectUriProblem {
  constraint: string;
  message: string;
}

// Schemes a redirect URI may use: web (http, https) and RFC 8252 §7.1 private-use schemes of native
// apps, which are reverse domain names (so never `javascript:`, `data:` or `file:`).
const PRIVATE_USE_SCHEME = /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+$/;

/**
 * RFC 8252 §7.3: `http` on a loopback IP literal, the port apart. Only `127.0.0.1` and `[::1]` as
 * written: `localhost` is a name that may resolve elsewhere (RFC 8252 §8.3, NOT RECOMMENDED), so it
 * is an ordinary host here. Groups: host, port (absent without one), the rest (path, query).
 */
const LOOPBACK = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?([/?].*)?$/s;

/** The authority of a `scheme://authority...` string as written (before any URL normalisation). */
const authorityOf = (uri: string, scheme: string) => uri.slice(scheme.length + 3).split(/[/?#]/, 1)[0]!;

/** Why `uri` cannot be registered as a redirect URI, or null when it can. */
export function redirectUriProblem(uri: string): RedirectUriProblem | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return { constraint: "absolute", message: "Not an absolute URI." };
  }
  const scheme = url.protocol.slice(0, -1);
  // RFC 6749 §3.1.2: "The endpoint URI MUST NOT include a fragment component."
  if (uri.includes("#"))
    return { constraint: "no fragment", message: "A redirect URI must not contain a fragment (RFC 6749 §3.1.2)." };
  // RFC 9700 §2.1, §4.1.3: compared exactly, never as a pattern; a `*` would only match itself.
  if (uri.includes("*"))
    return {
      constraint: "no wildcard",
      message: "Redirect URIs are compared exactly (RFC 9700 §2.1): a `*` is no wildcard; register each URI.",
    };
  if (scheme !== "https" && scheme !== "http" && !PRIVATE_USE_SCHEME.test(scheme))
    return {
      constraint: "scheme",
      message: "The scheme must be https, http or a reverse-domain private-use scheme (RFC 8252 §7.1).",
    };
  // The authority as written: a URL parser reads `https:///cb` or `https:/cb` as the host `cb`.
  const authority = uri.slice(0, scheme.length + 3).toLowerCase() === `${scheme}://` ? authorityOf(uri, scheme) : null;
  // RFC 3986 §3.2.1: user:password in a URI is deprecated, and `https://good@evil/` misleads whoever reads it.
  if (url.username || url.password || authority?.includes("@"))
    return {
      constraint: "no userinfo",
      message: "A redirect URI must not contain user information (RFC 3986 §3.2.1).",
    };
  if ((scheme === "https" || scheme === "http") && !authority)
    return { constraint: "host", message: "A web redirect URI needs a host: scheme://host/path (RFC 3986 §3.2.2)." };
  return null;
}

/**
 * Whether registering `uri` needs the client's `allow_insecure_redirects`: plain `http` anywhere but
 * on a loopback IP literal (RFC 6749 §3.1.2.1: TLS SHOULD protect the redirect; RFC 8252 §8.3).
 */
export function isInsecureRedirectUri(uri: string): boolean {
  return uri.slice(0, 5).toLowerCase() === "http:" && !LOOPBACK.test(uri);
}

/**
 * Whether `presented` is one of `registered` (RFC 6749 §3.1.2.3, RFC 9700 §2.1: character for
 * character), a loopback redirect URI matching with any port (RFC 8252 §7.3: a native app listens on
 * the port the system gives it at the time of the request).
 */
export function redirectUriMatches(registered: readonly string[], presented: string): boolean {
  if (registered.includes(presented)) return true;
  const loopback = LOOPBACK.exec(presented);
  if (!loopback) return false;
  const [, host, port, rest = ""] = loopback;
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65_535)) return false;
  return registered.some((r) => {
    const m = LOOPBACK.exec(r);
    return m !== null && m[1] === host && (m[3] ?? "") === rest;
  });
}
