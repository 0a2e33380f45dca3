// Single-use recovery codes: ten per confirmed factor, shown once, stored as SHA-256 hashes. A code
// is 10 characters of the RFC 4648 base32 alphabet (50 random bits) shown as `XXXXX-XXXXX`; with
// login throttling in front, a fast unsalted hash is enough for that much entropy.
import { createHash, randomInt } from "node:crypto";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
export const RECOVERY_CODE_COUNT = 10;

export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const chars = Array.from({ length: 10 }, () => ALPHABET[randomInt(ALPHABET.length)]).join("");
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  });
}

/** Case, spaces and dashes do not matter when a code is typed back. */
export function recoveryCodeHash(code: string): string | null {
  const normalised = code.toUpperCase().replace(/[\s-]/g, "");
  if (!/^[A-Z2-7]{10}$/.test(normalised)) return null;
  return createHash("sha256").update(normalised).digest("hex");
}
