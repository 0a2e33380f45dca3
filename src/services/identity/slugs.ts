// Slugs of tenants, groups and policies (wazo-auth's slugs, groups and policies): the name stripped of
// disallowed characters and truncated; if that is empty or taken, 3 random [a-z0-9] characters
// until one is free.
const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

function randomSlug(length = 3): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return [...bytes].map((b) => ALPHABET[b % ALPHABET.length]).join("");
}

export async function generateSlug(
  name: string | null | undefined,
  disallowed: RegExp,
  maxLength: number,
  taken: (slug: string) => Promise<boolean>,
): Promise<string> {
  const base = (name ?? "").replace(disallowed, "").slice(0, maxLength);
  if (base && !(await taken(base))) return base;
  for (;;) {
    const slug = randomSlug();
    if (!(await taken(slug))) return slug;
  }
}
