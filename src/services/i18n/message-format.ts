// A small subset of ICU MessageFormat (https://unicode-org.github.io/icu/userguide/format_parse/messages/),
// on the platform's Intl: enough for the hosted pages' and mails' catalogues (docs/languages.md).
//   {name}                                  the value, as text (a number through Intl.NumberFormat)
//   {n, plural, =0 {…} one {…} other {…}}   Intl.PluralRules of the locale; `#` is n, formatted
//   {x, select, a {…} other {…}}            a branch by value, `other` when none matches
//   {d, date, short|medium|long|full}       Intl.DateTimeFormat's dateStyle (a Date or an ISO string)
//   {n, number}                             Intl.NumberFormat
// Quoting as ICU: `''` is one apostrophe; `'{`…`'` quotes the braces it encloses; any other
// apostrophe is literal (catalogues use the typographic ’ anyway).
//
// This stands in for a maintained library (FormatJS `intl-messageformat`, or `messageformat`), which
// the project does not carry yet: the catalogue syntax is ICU's, so replacing this module changes
// no catalogue.

export type MessageValue = string | number | Date | null | undefined;
export type MessageValues = Record<string, MessageValue>;

type Node =
  | string
  | { kind: "arg"; name: string }
  | { kind: "pound" }
  | { kind: "date"; name: string; style: "short" | "medium" | "long" | "full" }
  | { kind: "number"; name: string }
  | { kind: "plural"; name: string; offset: number; branches: Map<string, Node[]> }
  | { kind: "select"; name: string; branches: Map<string, Node[]> };

export class MessageSyntaxError extends Error {}

/** Parses a message into its nodes; throws MessageSyntaxError on a malformed one. */
export function parseMessage(source: string): Node[] {
  let i = 0;
  const fail = (why: string): never => {
    throw new MessageSyntaxError(`${why} at ${i} in ${JSON.stringify(source)}`);
  };
  const space = () => {
    while (i < source.length && /\s/.test(source[i]!)) i++;
  };
  const word = () => {
    space();
    const m = /^[^\s{},]+/.exec(source.slice(i));
    if (!m) fail("a name was expected");
    i += m![0].length;
    space();
    return m![0];
  };
  const nodes = (inPlural: boolean, nested: boolean): Node[] => {
    const out: Node[] = [];
    let text = "";
    const flush = () => {
      if (text) out.push(text);
      text = "";
    };
    while (i < source.length) {
      const ch = source[i]!;
      if (ch === "'") {
        if (source[i + 1] === "'") {
          text += "'";
          i += 2;
          continue;
        }
        const next = source[i + 1];
        if (next === "{" || next === "}" || (inPlural && next === "#")) {
          const end = source.indexOf("'", i + 1);
          if (end < 0) fail("an unterminated quote");
          text += source.slice(i + 1, end);
          i = end + 1;
          continue;
        }
        text += ch;
        i++;
        continue;
      }
      if (ch === "}") {
        if (!nested) fail("an unmatched }");
        break;
      }
      if (ch === "#" && inPlural) {
        flush();
        out.push({ kind: "pound" });
        i++;
        continue;
      }
      if (ch === "{") {
        flush();
        i++;
        out.push(argument());
        continue;
      }
      text += ch;
      i++;
    }
    flush();
    return out;
  };
  const branches = (inPlural: boolean): Map<string, Node[]> => {
    const map = new Map<string, Node[]>();
    space();
    while (i < source.length && source[i] !== "}") {
      const key = word();
      if (source[i] !== "{") fail("a { was expected");
      i++;
      map.set(key, nodes(inPlural, true));
      if (source[i] !== "}") fail("a } was expected");
      i++;
      space();
    }
    if (!map.has("other")) fail("an `other` branch is required");
    return map;
  };
  const argument = (): Node => {
    const name = word();
    if (source[i] === "}") {
      i++;
      return { kind: "arg", name };
    }
    if (source[i] !== ",") fail("a , or } was expected");
    i++;
    const type = word();
    let node: Node;
    if (type === "plural") {
      if (source[i] !== ",") fail("a , was expected");
      i++;
      space();
      let offset = 0;
      const m = /^offset:(\d+)/.exec(source.slice(i));
      if (m) {
        offset = Number(m[1]);
        i += m[0].length;
      }
      node = { kind: "plural", name, offset, branches: branches(true) };
    } else if (type === "select") {
      if (source[i] !== ",") fail("a , was expected");
      i++;
      node = { kind: "select", name, branches: branches(false) };
    } else if (type === "date") {
      let style = "medium";
      if (source[i] === ",") {
        i++;
        style = word();
      }
      if (!["short", "medium", "long", "full"].includes(style)) fail(`unknown date style ${style}`);
      node = { kind: "date", name, style: style as "short" };
    } else if (type === "number") node = { kind: "number", name };
    else return fail(`unknown argument type ${type}`);
    space();
    if (source[i] !== "}") fail("a } was expected");
    i++;
    return node;
  };
  const out = nodes(false, false);
  if (i < source.length) fail("unexpected text");
  return out;
}

/** Every argument a message reads, with its type (`text`, `plural`, `select`, `date`, `number`), for the catalogue checks. */
export function messageArguments(source: string): Map<string, string> {
  const args = new Map<string, string>();
  const walk = (list: Node[]) => {
    for (const n of list) {
      if (typeof n === "string" || n.kind === "pound") continue;
      args.set(n.name, n.kind === "arg" ? "text" : n.kind);
      if (n.kind === "plural" || n.kind === "select") for (const b of n.branches.values()) walk(b);
    }
  };
  walk(parseMessage(source));
  return args;
}

const pluralRules = new Map<string, Intl.PluralRules>();
const numberFormats = new Map<string, Intl.NumberFormat>();

function plural(locale: string): Intl.PluralRules {
  let r = pluralRules.get(locale);
  if (!r) pluralRules.set(locale, (r = new Intl.PluralRules(locale)));
  return r;
}

function numberFormat(locale: string): Intl.NumberFormat {
  let f = numberFormats.get(locale);
  if (!f) numberFormats.set(locale, (f = new Intl.NumberFormat(locale)));
  return f;
}

function asDate(v: MessageValue): Date | null {
  if (v instanceof Date) return v;
  if (typeof v === "string" || typeof v === "number") {
    const d = new Date(v);
    return Number.isNaN(d.getTime()) ? null : d;
  }
  return null;
}

/** Formats parsed nodes in `locale` with `values` (a missing value is empty text). */
export function formatNodes(list: Node[], locale: string, values: MessageValues, pound?: number): string {
  let out = "";
  for (const n of list) {
    if (typeof n === "string") {
      out += n;
      continue;
    }
    switch (n.kind) {
      case "pound":
        out += pound === undefined ? "#" : numberFormat(locale).format(pound);
        break;
      case "arg": {
        const v = values[n.name];
        out += typeof v === "number" ? numberFormat(locale).format(v) : v instanceof Date ? v.toISOString() : (v ?? "");
        break;
      }
      case "number":
        out += numberFormat(locale).format(Number(values[n.name] ?? 0));
        break;
      case "date": {
        const d = asDate(values[n.name]);
        // Dates are shown in UTC: the page does not know the reader's time zone (no script).
        out += d ? new Intl.DateTimeFormat(locale, { dateStyle: n.style, timeZone: "UTC" }).format(d) : "";
        break;
      }
      case "plural": {
        const count = Number(values[n.name] ?? 0);
        const exact = n.branches.get(`=${count}`);
        const branch = exact ?? n.branches.get(plural(locale).select(count - n.offset)) ?? n.branches.get("other")!;
        out += formatNodes(branch, locale, values, count - n.offset);
        break;
      }
      case "select": {
        const v = String(values[n.name] ?? "");
        out += formatNodes(n.branches.get(v) ?? n.branches.get("other")!, locale, values, pound);
        break;
      }
    }
  }
  return out;
}
