// The grant rule (wazo-auth's grant rule, tightened): a caller may grant an ACL pattern only when
// its own ACL allows everything the pattern matches — some allow entries together cover the
// pattern, and none of its deny entries overlaps it. Checking the pattern as a plain access string
// (wazo-auth's rule) lets a caller holding `confd.#` and `!confd.admin.#` grant `confd.#` whole.
//
// Patterns are regular languages over characters, so inclusion and overlap are decided exactly on
// small automata: `*` is any run of characters other than `.` and `#`, `#` any run at all, a
// segment `me` / `my_session` is a symbol of its own meaning "the holder's own user / session"
// (for the caller it also matches its real ids), and a segment `edit` stands for `edit` or `update`.
import type { AclIdentity } from "./acl.ts";

const ME = "\u0001me";
const MY_SESSION = "\u0001my_session";
/** Stands for every character no pattern names: they all behave alike. */
const OTHER = "\u0001other";

type Edge = { kind: "sym"; sym: string; to: number } | { kind: "star" | "any"; to: number };

interface Nfa {
  edges: Edge[][];
  eps: number[][];
  start: number;
  accept: number;
}

class NfaBuilder {
  readonly edges: Edge[][] = [];
  readonly eps: number[][] = [];
  state(): number {
    this.edges.push([]);
    this.eps.push([]);
    return this.edges.length - 1;
  }
  word(from: number, text: string): number {
    let cur = from;
    for (const ch of text) {
      const next = this.state();
      this.edges[cur]!.push({ kind: "sym", sym: ch, to: next });
      cur = next;
    }
    return cur;
  }
  symbol(from: number, sym: string): number {
    const next = this.state();
    this.edges[from]!.push({ kind: "sym", sym, to: next });
    return next;
  }
  /** Any of `options` (each builds from a start state and returns its end state). */
  oneOf(from: number, options: Array<(start: number) => number>): number {
    const end = this.state();
    for (const build of options) {
      const start = this.state();
      this.eps[from]!.push(start);
      this.eps[build(start)]!.push(end);
    }
    return end;
  }
  loop(from: number, kind: "star" | "any"): number {
    const next = this.state();
    this.eps[from]!.push(next);
    this.edges[next]!.push({ kind, to: next });
    return next;
  }
}

function segment(b: NfaBuilder, from: number, seg: string, id: AclIdentity): number {
  if (seg === "me" || seg === "my_session") {
    const own = seg === "me" ? id.authId : id.sessionUuid;
    const sym = seg === "me" ? ME : MY_SESSION;
    return b.oneOf(from, [(s) => b.symbol(s, sym), ...(own ? [(s: number) => b.word(s, own)] : [])]);
  }
  if (seg === "edit") return b.oneOf(from, [(s) => b.word(s, "edit"), (s) => b.word(s, "update")]);
  let cur = from;
  for (const ch of seg) {
    if (ch === "*") cur = b.loop(cur, "star");
    else if (ch === "#") cur = b.loop(cur, "any");
    else cur = b.word(cur, ch);
  }
  return cur;
}

/** The automaton of one ACL entry (without `!`), with `me`/`my_session` bound to `id` when given. */
function compilePattern(entry: string, id: AclIdentity): Nfa {
  const b = new NfaBuilder();
  const start = b.state();
  let cur = start;
  entry.split(".").forEach((seg, i) => {
    if (i > 0) cur = b.word(cur, ".");
    cur = segment(b, cur, seg, id);
  });
  return { edges: b.edges, eps: b.eps, start, accept: cur };
}

const accepts = (e: Edge, sym: string) =>
  e.kind === "sym" ? e.sym === sym : e.kind === "any" || (sym !== "." && sym !== "#");

function closure(nfa: Nfa, states: Iterable<number>): Set<number> {
  const out = new Set<number>(states);
  const stack = [...out];
  while (stack.length) {
    for (const n of nfa.eps[stack.pop()!]!) {
      if (!out.has(n)) {
        out.add(n);
        stack.push(n);
      }
    }
  }
  return out;
}

function step(nfa: Nfa, states: Set<number>, sym: string): Set<number> {
  const next: number[] = [];
  for (const s of states) for (const e of nfa.edges[s]!) if (accepts(e, sym)) next.push(e.to);
  return closure(nfa, next);
}

function alphabet(nfas: Nfa[]): string[] {
  const syms = new Set<string>([".", "#", ME, MY_SESSION, OTHER]);
  for (const nfa of nfas) for (const edges of nfa.edges) for (const e of edges) if (e.kind === "sym") syms.add(e.sym);
  return [...syms];
}

/** Sets of states of several automata at once (a lazily determinised union or product). */
type Multi = Set<number>[];
const keyOf = (m: Multi) => m.map((s) => [...s].sort((a, b) => a - b).join(",")).join("|");
const anyAccepts = (nfas: Nfa[], m: Multi, from = 0) => nfas.some((nfa, i) => i >= from && m[i]!.has(nfa.accept));

/** Explored determinised states at most; past it the answer is the cautious one. */
const MAX_STATES = 20_000;

/**
 * Breadth-first walk over every string, tracking the states of `nfas` together; `stop` decides on
 * each reachable combination. Returns the witness (with ME/OTHER as readable text) or null.
 */
function search(nfas: Nfa[], stop: (m: Multi) => boolean, keepGoing: (m: Multi) => boolean): string | null | "limit" {
  const syms = alphabet(nfas);
  const first = nfas.map((nfa) => closure(nfa, [nfa.start]));
  const seen = new Set<string>([keyOf(first)]);
  const queue: Array<{ m: Multi; word: string }> = [{ m: first, word: "" }];
  while (queue.length) {
    const { m, word } = queue.shift()!;
    if (stop(m)) return word;
    for (const sym of syms) {
      const next = nfas.map((nfa, i) => step(nfa, m[i]!, sym));
      if (!keepGoing(next)) continue;
      const key = keyOf(next);
      if (seen.has(key)) continue;
      if (seen.size >= MAX_STATES) return "limit";
      seen.add(key);
      queue.push({ m: next, word: word + readable(sym) });
    }
  }
  return null;
}

const readable = (sym: string) => (sym === ME ? "me" : sym === MY_SESSION ? "my_session" : sym === OTHER ? "~" : sym);

/** A string matched by both patterns, or null when their languages are disjoint. */
export function overlapWitness(a: string, b: string, idA: AclIdentity = {}, idB: AclIdentity = {}): string | null {
  const nfas = [compilePattern(a, idA), compilePattern(b, idB)];
  const found = search(
    nfas,
    (m) => m[0]!.has(nfas[0]!.accept) && m[1]!.has(nfas[1]!.accept),
    (m) => m[0]!.size > 0 && m[1]!.size > 0,
  );
  return found === "limit" ? a : found; // undecided → treat as overlapping
}

/** A string matched by `pattern` and by none of `allows`, or null when they cover it. */
export function uncoveredWitness(
  allows: readonly string[],
  pattern: string,
  idAllows: AclIdentity = {},
  idPattern: AclIdentity = {},
): string | null {
  const nfas = [compilePattern(pattern, idPattern), ...allows.map((a) => compilePattern(a, idAllows))];
  const found = search(
    nfas,
    (m) => m[0]!.has(nfas[0]!.accept) && !anyAccepts(nfas, m, 1),
    (m) => m[0]!.size > 0,
  );
  return found === "limit" ? pattern : found; // undecided → treat as not covered
}

export interface GrantCheck {
  /** May the caller put `entry` (`x` or `!x`) into an ACL it gives to someone else? */
  mayGrant(entry: string): boolean;
  /** May the caller take `entry` out of such an ACL? Taking out `!x` grants `x`, so the same rule. */
  mayRevoke(entry: string): boolean;
}

/** The grant rule for a caller holding `acl` (its `me`/`my_session` bound to `id`). */
export function grantCheck(acl: readonly string[], id: AclIdentity): GrantCheck {
  const allows = acl.filter((e) => !e.startsWith("!"));
  const denies = acl.filter((e) => e.startsWith("!")).map((e) => e.slice(1));
  const allowAll = allows.includes("#") && denies.length === 0;
  const holds = (pattern: string) =>
    allowAll ||
    (uncoveredWitness(allows, pattern, id) === null && denies.every((d) => overlapWitness(d, pattern, id) === null));
  return {
    mayGrant: (entry) => entry.startsWith("!") || holds(entry),
    mayRevoke: (entry) => holds(entry.startsWith("!") ? entry.slice(1) : entry),
  };
}
