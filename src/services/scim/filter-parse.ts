// The SCIM filter grammar (RFC 7644 §3.4.2.2, its ABNF in Figure 1) and PATCH paths (§3.5.2,
// Figure 3) parsed into a tree. Precedence as the RFC orders it: grouping, then `not`, `and`,
// `or`. Operators, `and`/`or`/`not` and the literals are case-insensitive; attribute names are
// kept as written (the evaluators compare them case-insensitively, RFC 7643 §2.1).
import { invalidFilter, invalidPath } from "./errors.ts";

/** `[schema URN ":"] attribute ["." sub-attribute]`. */
export interface AttrPath {
  /** The schema URN when the path was written in full (`urn:…:User:userName`), else null. */
  schema: string | null;
  attr: string;
  sub: string | null;
}

export type CompareOp = "eq" | "ne" | "co" | "sw" | "ew" | "gt" | "ge" | "lt" | "le";
export type Value = string | number | boolean | null;

export type Filter =
  | { op: "pr"; path: AttrPath }
  | { op: CompareOp; path: AttrPath; value: Value }
  | { op: "and" | "or"; left: Filter; right: Filter }
  | { op: "not"; filter: Filter }
  /** `attr[filter]`: some value of the multi-valued `attr` matches `filter` (its paths are sub-attributes). */
  | { op: "has"; path: AttrPath; filter: Filter };

/** A PATCH path: an attribute, optionally narrowed by a value filter, optionally then a sub-attribute. */
export interface PatchPath {
  path: AttrPath;
  filter: Filter | null;
  /** `emails[type eq "work"].value`: the sub-attribute after the filter. */
  sub: string | null;
}

const COMPARE = new Set(["eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le"]);
/** Filters deeper than this are refused: a bound on the recursion an attacker controls. */
const MAX_DEPTH = 50;
const MAX_LENGTH = 4096;

type Token =
  | { t: "word"; v: string; at: number }
  | { t: "string"; v: string; at: number }
  | { t: "number"; v: number; at: number }
  | { t: "(" | ")" | "[" | "]"; at: number }
  | { t: "end"; at: number };

const WORD = /[A-Za-z0-9:._$-]/;

function tokenize(text: string, fail: (m: string) => Error): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === " " || ch === "\t" || ch === "\n" || ch === "\r") {
      i++;
    } else if (ch === "(" || ch === ")" || ch === "[" || ch === "]") {
      out.push({ t: ch, at: i });
      i++;
    } else if (ch === '"') {
      const start = i;
      i++;
      let raw = '"';
      while (i < text.length && text[i] !== '"') {
        if (text[i] === "\\") {
          raw += text.slice(i, i + 2);
          i += 2;
        } else raw += text[i++];
      }
      if (i >= text.length) throw fail(`unterminated string at ${start}`);
      raw += '"';
      i++;
      let v: string;
      try {
        v = JSON.parse(raw) as string;
      } catch {
        throw fail(`invalid string at ${start}`);
      }
      out.push({ t: "string", v, at: start });
    } else if (/[-0-9]/.test(ch) && /^-?\d/.test(text.slice(i, i + 2))) {
      const m = /^-?\d+(\.\d+)?([eE][-+]?\d+)?/.exec(text.slice(i))!;
      // A number glued to letters is a word (an attribute named like `2fa` is not a number).
      if (i + m[0].length < text.length && /[A-Za-z_:]/.test(text[i + m[0].length]!)) {
        const start = i;
        while (i < text.length && WORD.test(text[i]!)) i++;
        out.push({ t: "word", v: text.slice(start, i), at: start });
      } else {
        out.push({ t: "number", v: Number(m[0]), at: i });
        i += m[0].length;
      }
    } else if (WORD.test(ch)) {
      const start = i;
      while (i < text.length && WORD.test(text[i]!)) i++;
      out.push({ t: "word", v: text.slice(start, i), at: start });
    } else {
      throw fail(`unexpected character ${JSON.stringify(ch)} at ${i}`);
    }
  }
  out.push({ t: "end", at: text.length });
  return out;
}

/** `urn:…:User:name.givenName` → {schema: "urn:…:User", attr: "name", sub: "givenName"}. */
export function parseAttrPath(text: string, fail: (m: string) => Error = invalidFilter): AttrPath {
  let schema: string | null = null;
  let rest = text;
  if (/^urn:/i.test(text)) {
    const colon = text.lastIndexOf(":");
    schema = text.slice(0, colon);
    rest = text.slice(colon + 1);
  }
  const parts = rest.split(".");
  const valid = (s: string | undefined) => s !== undefined && /^[A-Za-z$][A-Za-z0-9_$-]*$/.test(s);
  if (parts.length > 2 || !valid(parts[0]) || (parts.length === 2 && !valid(parts[1])))
    throw fail(`invalid attribute path ${JSON.stringify(text)}`);
  return { schema, attr: parts[0]!, sub: parts[1] ?? null };
}

class Parser {
  private i = 0;
  constructor(
    private readonly tokens: Token[],
    private readonly fail: (m: string) => Error,
  ) {}

  peek(): Token {
    return this.tokens[this.i]!;
  }
  next(): Token {
    return this.tokens[this.i++]!;
  }
  keyword(word: string): boolean {
    const t = this.peek();
    return t.t === "word" && t.v.toLowerCase() === word;
  }
  expect(t: Token["t"]): Token {
    const got = this.next();
    if (got.t !== t) throw this.fail(`expected ${t === "end" ? "the end of the filter" : `"${t}"`} at ${got.at}`);
    return got;
  }

  /** or-expression: and ("or" and)* */
  filter(depth: number, inValue: boolean): Filter {
    if (depth > MAX_DEPTH) throw this.fail("filter nested too deeply");
    let left = this.conjunction(depth, inValue);
    while (this.keyword("or")) {
      this.next();
      left = { op: "or", left, right: this.conjunction(depth, inValue) };
    }
    return left;
  }

  conjunction(depth: number, inValue: boolean): Filter {
    let left = this.unary(depth, inValue);
    while (this.keyword("and")) {
      this.next();
      left = { op: "and", left, right: this.unary(depth, inValue) };
    }
    return left;
  }

  unary(depth: number, inValue: boolean): Filter {
    if (this.keyword("not")) {
      const not = this.next();
      if (this.peek().t !== "(") throw this.fail(`"not" must be followed by "(" at ${not.at}`);
      return { op: "not", filter: this.unary(depth + 1, inValue) };
    }
    if (this.peek().t === "(") {
      this.next();
      const inner = this.filter(depth + 1, inValue);
      this.expect(")");
      return inner;
    }
    return this.attrExpression(depth, inValue);
  }

  attrExpression(depth: number, inValue: boolean): Filter {
    const t = this.next();
    if (t.t !== "word") throw this.fail(`expected an attribute path at ${t.at}`);
    const path = parseAttrPath(t.v, this.fail);
    if (this.peek().t === "[") {
      if (inValue) throw this.fail(`a value filter cannot nest another at ${t.at}`);
      if (path.sub !== null) throw this.fail(`a value filter applies to an attribute, not a sub-attribute, at ${t.at}`);
      this.next();
      const filter = this.filter(depth + 1, true);
      this.expect("]");
      // Entra ID's existence check `emails[type eq "work"].value eq "…"` (not in the RFC's grammar,
      // read as: some value matches the filter and its sub-attribute the comparison).
      const after = this.peek();
      if (after.t === "word" && /^\.[A-Za-z$][A-Za-z0-9_$-]*$/.test(after.v)) {
        this.next();
        const sub: AttrPath = { schema: null, attr: after.v.slice(1), sub: null };
        const opToken = this.next();
        const op = opToken.t === "word" ? opToken.v.toLowerCase() : "";
        const cmp: Filter =
          op === "pr"
            ? { op: "pr", path: sub }
            : COMPARE.has(op)
              ? { op: op as CompareOp, path: sub, value: this.value() }
              : (() => {
                  throw this.fail(`expected an operator after ${after.v} at ${opToken.at}`);
                })();
        return { op: "has", path, filter: { op: "and", left: filter, right: cmp } };
      }
      return { op: "has", path, filter };
    }
    const opToken = this.next();
    if (opToken.t !== "word") throw this.fail(`expected an operator after ${t.v} at ${opToken.at}`);
    const op = opToken.v.toLowerCase();
    if (op === "pr") return { op: "pr", path };
    if (!COMPARE.has(op)) throw this.fail(`unknown operator ${JSON.stringify(opToken.v)} at ${opToken.at}`);
    return { op: op as CompareOp, path, value: this.value() };
  }

  value(): Value {
    const t = this.next();
    if (t.t === "string" || t.t === "number") return t.v;
    if (t.t === "word") {
      const w = t.v.toLowerCase();
      if (w === "true") return true;
      if (w === "false") return false;
      if (w === "null") return null;
    }
    throw this.fail(`expected a value (string, number, true, false or null) at ${t.at}`);
  }
}

/** Parses a `filter` query parameter (or the filter of a PATCH path); 400 invalidFilter when malformed. */
export function parseFilter(text: string): Filter {
  if (text.length > MAX_LENGTH) throw invalidFilter(`filter longer than ${MAX_LENGTH} characters`);
  const p = new Parser(tokenize(text, invalidFilter), invalidFilter);
  const f = p.filter(0, false);
  p.expect("end");
  return f;
}

/** Parses a PATCH operation's `path` (§3.5.2): `attrPath` or `valuePath ["." subAttr]`; 400 invalidPath. */
export function parsePatchPath(text: string): PatchPath {
  if (text.length > MAX_LENGTH) throw invalidPath(`path longer than ${MAX_LENGTH} characters`);
  const open = text.indexOf("[");
  if (open < 0) return { path: parseAttrPath(text.trim(), invalidPath), filter: null, sub: null };
  const close = text.lastIndexOf("]");
  if (close < open) throw invalidPath(`unbalanced "[" in path ${JSON.stringify(text)}`);
  const path = parseAttrPath(text.slice(0, open).trim(), invalidPath);
  if (path.sub !== null) throw invalidPath(`a value filter applies to an attribute, not a sub-attribute`);
  const p = new Parser(tokenize(text.slice(open + 1, close), invalidPath), invalidPath);
  const filter = p.filter(0, true);
  p.expect("end");
  const after = text.slice(close + 1).trim();
  let sub: string | null = null;
  if (after) {
    if (!/^\.[A-Za-z$][A-Za-z0-9_$-]*$/.test(after)) throw invalidPath(`invalid path ${JSON.stringify(text)}`);
    sub = after.slice(1);
  }
  return { path, filter, sub };
}
