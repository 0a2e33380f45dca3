// Strings the database always accepts. PostgreSQL refuses NUL in text, an unpaired UTF-16
// surrogate cannot be encoded as UTF-8 (nor stored in jsonb), and a btree index entry may not
// exceed ~2.7 kB. Every route schema builds its strings here, and the route pipeline checks every
// path parameter, query value and body string against the same rules (docs/security.md "Security"), so bad
// input is a 400 (or a 404 for a path segment naming a resource), never a 500.
import { z } from "zod";

/** Caps in characters (UTF-16 code units), one place: the table of docs/security.md is this object. */
export const CAPS = {
  /** Any string of a JSON body that its route does not cap more tightly (stored only in unindexed text). */
  bodyString: 65_536,
  /** Any query-string value (compared, never stored by the query). */
  queryValue: 4_096,
  /** Any path segment. */
  pathSegment: 1_024,
  /** `search` of list endpoints. */
  search: 1_024,
  username: 256,
  /** firstname, lastname: indexed, so also at most `personNameBytes` UTF-8 bytes. */
  personName: 2_000,
  personNameBytes: 2_000,
  email: 254,
  password: 1_024,
  tenantName: 128,
  groupName: 128,
  policyName: 80,
  slug: 80,
  description: 2_048,
  /** One ACL entry (indexed: `auth_access.access` is unique). */
  aclEntry: 512,
  /** Names of methods, backends, IdP and external-auth types. */
  shortName: 128,
  /** OAuth2 client id of refresh tokens (wazo-auth's 1..1024), at most 2,048 UTF-8 bytes (indexed). */
  clientId: 1_024,
  clientIdBytes: 2_048,
  /** Depth of nested arrays and objects in a JSON body. */
  jsonDepth: 32,
} as const;

// With the `u` flag a surrogate class matches only surrogates that are not part of a pair.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

export interface StringProblem {
  constraint_id: string;
  constraint: unknown;
  message: string;
}

const CHARACTERS: StringProblem = {
  constraint_id: "predicate",
  constraint: "no NUL character, no unpaired surrogate",
  message: "Must not contain NUL characters or unpaired surrogates.",
};

/** Why a string cannot be stored, or null when it can: NUL, an unpaired surrogate, or over `max`. */
export function stringProblem(s: string, max: number): StringProblem | null {
  if (s.length > max)
    return { constraint_id: "length", constraint: { max }, message: `Longer than maximum length ${max}.` };
  if (s.includes("\u0000") || LONE_SURROGATE.test(s)) return CHARACTERS;
  return null;
}

export const isStorableString = (s: string, max: number = CAPS.bodyString) => stringProblem(s, max) === null;

export interface TextOptions {
  min?: number;
  /** UTF-8 byte cap, for indexed columns whose character cap could exceed the index entry limit. */
  maxBytes?: number;
}

/** A string of at most `max` characters that the database accepts (no NUL, no unpaired surrogate). */
export function text(max: number, opts: TextOptions = {}) {
  let s = z.string();
  if (opts.min !== undefined) s = s.min(opts.min);
  return s.max(max).superRefine((v, ctx) => {
    if (v.includes("\u0000") || LONE_SURROGATE.test(v))
      ctx.addIssue({
        code: "custom",
        message: CHARACTERS.message,
        params: { constraint_id: CHARACTERS.constraint_id, constraint: CHARACTERS.constraint },
      });
    else if (opts.maxBytes !== undefined && Buffer.byteLength(v, "utf8") > opts.maxBytes) {
      ctx.addIssue({
        code: "custom",
        message: `Longer than maximum length ${opts.maxBytes} bytes (UTF-8).`,
        params: { constraint_id: "length", constraint: { max_bytes: opts.maxBytes } },
      });
    }
  });
}

/** A path segment naming a resource (uuid, slug, client id, type name). */
export const segment = () => text(CAPS.pathSegment, { min: 1 });

/** An email address (RFC 5321 caps it at 254 characters). */
export const emailText = () => z.email().max(CAPS.email);

// Control and format characters (NUL, tabs, zero-width spaces, BOM, bidi marks…) make lookalike
// logins; a colon cannot be typed in HTTP Basic credentials (the first one splits login and password).
const USERNAME_BANNED = /[\p{Cc}\p{Cf}:]/u;
export const USERNAME_PATTERN = "^[^\\p{Cc}\\p{Cf}:]+$";

/** A username: 1..256 characters, no control or format character, no `:`, stored NFC-normalised. */
export const usernameText = () =>
  text(CAPS.username, { min: 1 })
    .superRefine((v, ctx) => {
      if (USERNAME_BANNED.test(v))
        ctx.addIssue({
          code: "custom",
          message: "Must not contain control or invisible characters or a colon.",
          params: { constraint_id: "regex", constraint: USERNAME_PATTERN },
        });
    })
    .transform(normalizeLogin);

/** The one form logins are stored and compared in (Unicode NFC), so lookalike encodings match. */
export function normalizeLogin(login: string): string {
  return login.normalize("NFC");
}

export interface BodyProblem {
  path: string[];
  problem: StringProblem;
}

/**
 * Every string (and key) of a parsed JSON body checked against `max`, and its depth against
 * `CAPS.jsonDepth`; iterative, so a deeply nested body cannot overflow the stack. At most `limit`
 * problems are reported.
 */
export function jsonBodyProblems(value: unknown, max: number = CAPS.bodyString, limit = 20): BodyProblem[] {
  const problems: BodyProblem[] = [];
  const stack: Array<{ v: unknown; path: string[] }> = [{ v: value, path: [] }];
  while (stack.length && problems.length < limit) {
    const { v, path } = stack.pop()!;
    if (typeof v === "string") {
      const p = stringProblem(v, max);
      if (p) problems.push({ path, problem: p });
    } else if (v !== null && typeof v === "object") {
      if (path.length >= CAPS.jsonDepth) {
        problems.push({
          path,
          problem: {
            constraint_id: "predicate",
            constraint: { max_depth: CAPS.jsonDepth },
            message: `Nested deeper than ${CAPS.jsonDepth} levels.`,
          },
        });
        continue;
      }
      for (const [k, child] of Object.entries(v)) {
        const keyProblem = stringProblem(k, CAPS.pathSegment);
        if (keyProblem)
          problems.push({
            path: [...path, "_schema"],
            problem: { ...keyProblem, message: `Invalid key: ${keyProblem.message}` },
          });
        else stack.push({ v: child, path: [...path, k] });
      }
    }
  }
  return problems;
}
