// ACL pattern language of wazo-auth (wazo-auth's ACL matching), pure and allocation-light:
// a token's ACL compiles once into two regular expressions (allowed, denied).
//   `*`  one dot-segment or part of one (never crosses `.` or `#`)
//   `#`  anything, dots included, possibly empty (`foo.#` does not match `foo`)
//   segment `me` / `my_session`  also the token's auth id / session uuid
//   segment `edit`  also `update` (legacy), never the reverse
//   `!entry`  denies, whatever the order of entries

export interface AclIdentity {
  authId?: string | null;
  sessionUuid?: string | null;
}

export interface AclMatcher {
  /** True when `access` is granted: some positive entry matches and no negative one does. */
  matches(access: string | null | undefined): boolean;
  /** True when a negative entry matches `access` (whatever the positive entries say). */
  denies(access: string): boolean;
}

const escapeRegex = (s: string) => s.replace(/[\\^$.*+?()[\]{}|/#-]/g, "\\$&");

function segmentPattern(segment: string, id: AclIdentity): string {
  if (segment === "me") return id.authId ? `(?:me|${escapeRegex(id.authId)})` : "me";
  if (segment === "my_session") return id.sessionUuid ? `(?:my_session|${escapeRegex(id.sessionUuid)})` : "my_session";
  if (segment === "edit") return "(?:edit|update)";
  let out = "";
  for (const ch of segment) {
    if (ch === "*") out += "[^.#]*?";
    else if (ch === "#") out += ".*?";
    else out += escapeRegex(ch);
  }
  return out;
}

/** The anchored-less regex source of one ACL entry (without its `!`). */
export function entryPattern(entry: string, id: AclIdentity = {}): string {
  return entry
    .split(".")
    .map((s) => segmentPattern(s, id))
    .join("\\.");
}

const NEVER: RegExp = /(?!)/;

function compileUnion(entries: string[], id: AclIdentity): RegExp {
  if (entries.length === 0) return NEVER;
  // One alternation per token: a single regex test instead of one per entry.
  const unique = [...new Set(entries)];
  return new RegExp(`^(?:${unique.map((e) => entryPattern(e, id)).join("|")})$`, "s");
}

export function compileAcl(acl: readonly string[], id: AclIdentity = {}): AclMatcher {
  const positive: string[] = [];
  const negative: string[] = [];
  for (const entry of acl) {
    if (entry.startsWith("!")) negative.push(entry.slice(1));
    else positive.push(entry);
  }
  const allowAll = positive.includes("#") && negative.length === 0;
  const allow = compileUnion(positive, id);
  const deny = compileUnion(negative, id);
  return {
    matches(access) {
      if (access == null) return true;
      if (allowAll) return true;
      if (negative.length > 0 && deny.test(access)) return false;
      return allow.test(access);
    },
    denies(access) {
      return negative.length > 0 && deny.test(access);
    },
  };
}

/** One-off check; prefer `compileAcl` when checking several accesses against the same ACL. */
export function aclMatches(acl: readonly string[], access: string | null | undefined, id: AclIdentity = {}): boolean {
  return compileAcl(acl, id).matches(access);
}

/** A required ACL with its `{param}` placeholders filled, each value's dots replaced by `_`. */
export function fillAcl(template: string, params: Record<string, string | undefined>): string {
  return template.replace(/\{(\w+)\}/g, (_m, name: string) => String(params[name] ?? "").replaceAll(".", "_"));
}
