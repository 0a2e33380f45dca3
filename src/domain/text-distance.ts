// How far apart two names are, to suggest the one a typo meant (configuration keys, CLI options).

/** Levenshtein distance (small strings: a row at a time). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

/** Edits a typo of `name` may hold: 2, or a third of its length when longer. */
export const typoAllowance = (name: string): number => Math.max(2, Math.floor(name.length / 3));

/** The candidate closest to `name` within a typo's distance (or one it abbreviates), else null. */
export function closestName(name: string, candidates: Iterable<string>): string | null {
  let best: { name: string; score: number } | null = null;
  for (const candidate of candidates) {
    const score = name.length >= 3 && candidate.startsWith(name) ? 1 : editDistance(name, candidate);
    if (score <= typoAllowance(name) && (!best || score < best.score)) best = { name: candidate, score };
  }
  return best?.name ?? null;
}
