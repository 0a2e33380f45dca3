// Masking secrets before anything is shown or logged (D12 of docs/wazo-auth-differences.md): values under secret-looking keys,
// credentials inside URIs (userinfo, and secret-looking query parameters), recursively.
const MASK = "********";

/**
 * The names that hold secrets, listed rather than guessed: a key is secret when its name (in
 * snake_case, `clientSecret` → `client_secret`) is one of them or ends with `_` and one of them
 * (`bootstrap_user_password`, `smtp.password`, a plugin's `webhook_secret`). A name that merely
 * contains one (`password_hash_algorithm`, `password_reset_max_requests`, `token_cleanup_interval`,
 * `saml.key_file`) says what it is, and is shown.
 */
export const SECRET_KEY_NAMES = [
  "password",
  "passwd",
  "passphrase",
  "pwd",
  "secret",
  "secrets",
  "client_secret",
  "credential",
  "credentials",
  "token",
  "tokens",
  "access_token",
  "refresh_token",
  "api_key",
  "apikey",
  "private_key",
  "key",
  "cookie",
  "salt",
  "pin",
] as const;
const SECRET_NAME = new RegExp(`(^|_)(${SECRET_KEY_NAMES.join("|")})$`);

const snakeCase = (key: string) =>
  key
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/[-\s.]+/g, "_")
    .toLowerCase();

export const isSecretKey = (key: string) => SECRET_NAME.test(snakeCase(key));

/**
 * One URI with its credentials masked. Not left to a URL parser: `postgres://u:p@ss@h/db` and
 * `amqp://guest:gu/est@host` are how people write unescaped passwords, so the userinfo is whatever
 * lies between `scheme://` and the LAST `@` (the user name before the first `:` stays readable).
 */
function maskUri(uri: string): string {
  const m = /^([a-z][a-z0-9+.-]*:\/\/)(.*)$/is.exec(uri);
  if (!m) return uri;
  const [, scheme, rest] = m as unknown as [string, string, string];
  let out = rest;
  const at = rest.lastIndexOf("@");
  if (at >= 0) {
    const userinfo = rest.slice(0, at);
    const colon = userinfo.indexOf(":");
    const user = colon >= 0 ? userinfo.slice(0, colon) : "";
    const keepUser = colon >= 0 && !/[/?#]/.test(user);
    out = `${keepUser ? `${user}:` : ""}${MASK}${rest.slice(at)}`;
  }
  return scheme + maskQuery(out);
}

/** `?password=x&user=y` → `?password=********&user=y` (any secret-looking parameter name). */
function maskQuery(s: string): string {
  const q = s.indexOf("?");
  if (q < 0) return s;
  return (
    s.slice(0, q) +
    s
      .slice(q)
      .replace(/([?&;])([^=&;#]*)=([^&;#]*)/g, (all, sep: string, name: string) =>
        isSecretKey(decodeSafe(name)) ? `${sep}${name}=${MASK}` : all,
      )
  );
}

function decodeSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Every URI inside a text (split on whitespace) with its credentials masked. */
export function maskUris(text: string): string {
  if (!text.includes("://")) return text;
  return text
    .split(/(\s+)/)
    .map((word) => {
      const i = word.search(/[a-z][a-z0-9+.-]*:\/\//i);
      return i < 0 ? word : word.slice(0, i) + maskUri(word.slice(i));
    })
    .join("");
}

/** A copy of `value` safe to show: secret keys masked whatever their depth, URIs masked everywhere. */
export function maskSecrets(value: unknown, key = "", underSecret = false): unknown {
  const secret = underSecret || isSecretKey(key);
  if (value == null || typeof value === "boolean") return value;
  if (typeof value === "string") return secret ? MASK : maskUris(value);
  if (typeof value === "number" || typeof value === "bigint") return secret ? MASK : value;
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, key, secret));
  if (typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskSecrets(v, k, secret)]));
  return value;
}
