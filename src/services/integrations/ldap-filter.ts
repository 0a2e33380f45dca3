// The two places a login reaches an LDAP string: the search filter (wazo-auth's `search_filters`, a
// Python `str.format` template) and the direct user DN. Values are always escaped — RFC 4515 for
// filters (ldapts' Filter.escape), RFC 4514 for DN values — so a login can never change the
// filter's or the DN's structure.

/** ldapts, loaded at the first LDAP filter (a literal require: the single-file build carries it). */
const ldapts = () => require("ldapts") as typeof import("ldapts");

export const DEFAULT_SEARCH_FILTER = "{user_login_attribute}={username}";
export const FILTER_PLACEHOLDERS = ["username", "user_login_attribute", "user_email_attribute"] as const;
type Placeholder = (typeof FILTER_PLACEHOLDERS)[number];

/** RFC 4512 attribute description: a name (letters, digits, hyphens) or a numeric OID. */
export const ATTRIBUTE_RE = /^(?:[A-Za-z][A-Za-z0-9-]*|\d+(?:\.\d+)+)$/;

/** Why a template cannot be used, or null when it is a valid filter once filled. */
export function searchFilterProblem(template: string): string | null {
  try {
    ldapts().FilterParser.parseString(
      fillSearchFilter(template, { username: "u", user_login_attribute: "uid", user_email_attribute: "mail" }),
    );
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

/** `str.format` with the three placeholders (`{{`/`}}` are literal braces), values filter-escaped. */
export function fillSearchFilter(template: string, values: Record<Placeholder, string>): string {
  const filled = template.replace(/\{\{|\}\}|\{([^{}]*)\}|[{}]/g, (match, name: string | undefined) => {
    if (match === "{{") return "{";
    if (match === "}}") return "}";
    if (name === undefined || !(FILTER_PLACEHOLDERS as readonly string[]).includes(name)) {
      throw new Error(`unknown placeholder ${match}; use {username}, {user_login_attribute} or {user_email_attribute}`);
    }
    return ldapts().Filter.escape(values[name as Placeholder]);
  });
  // python-ldap accepts a bare `attr=value`; ldapts wants the parentheses.
  return filled.startsWith("(") ? filled : `(${filled})`;
}

/**
 * RFC 4514 §2.4: an attribute value made safe to put in a DN. Kept by hand rather than ldapts' `DN`
 * builder, which does not implement §2.4 (checked with ldapts 9, tests/services/ldap-dn.test.ts): it wraps a
 * value with a leading or trailing space in double quotes (RFC 1779's form, which §2.4 dropped, so
 * the quotes would become part of the value) and leaves NUL and other control characters raw.
 */
export function escapeDnValue(value: string): string {
  const chars = [...value];
  return chars
    .map((ch, i) => {
      const code = ch.codePointAt(0)!;
      if (code < 0x20 || code === 0x7f) return `\\${code.toString(16).padStart(2, "0")}`;
      if ('"+,;<>\\='.includes(ch)) return `\\${ch}`;
      if ((i === 0 && (ch === "#" || ch === " ")) || (i === chars.length - 1 && ch === " ")) return `\\${ch}`;
      return ch;
    })
    .join("");
}
