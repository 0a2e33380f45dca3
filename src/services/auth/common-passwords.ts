// The list of commonly used and breached passwords that NIST SP 800-63B §3.1.1.2 asks verifiers to
// refuse: the "passwords-common" dictionary of @zxcvbn-ts/language-common (MIT; ~49,000 entries drawn
// from breach corpora, lower-case), shipped in the package and so updated with Tessera's releases —
// never fetched at run time. Loaded on first use (~100 ms): a process that sets no password never pays.
let list: Promise<ReadonlySet<string>> | null = null;

function commonPasswords(): Promise<ReadonlySet<string>> {
  list ??= import("@zxcvbn-ts/language-common").then(({ dictionary }) => {
    const words = dictionary["passwords-common"] as readonly (string | number)[];
    return new Set(words.map((w) => comparable(String(w))));
  });
  return list;
}

/** The form passwords and list entries are compared in: NFKC (width and compatibility forms fold), lower case. */
export function comparable(s: string): string {
  return s.normalize("NFKC").toLowerCase();
}

/** True when the password, compared case-insensitively, is on the shipped list. */
export async function isCommonPassword(password: string): Promise<boolean> {
  return (await commonPasswords()).has(comparable(password));
}
