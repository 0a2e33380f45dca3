// Password hashes in wazo-auth's format (COMPATIBILITY.md §10.2): PBKDF2-HMAC-SHA512, 64-byte
// random salt, 64-byte key as lowercase hex. WebCrypto runs the derivation off the event loop.
// The iteration count is stored per user (null = 250,000) so the cost can change over time.
import { timingSafeEqual } from "node:crypto";

export const WAZO_ITERATIONS = 250_000;

export interface PasswordHash {
  hash: string;
  salt: Uint8Array;
  iterations: number;
}

async function derive(password: string, salt: Uint8Array, iterations: number): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(password), "PBKDF2", false, ["deriveBits"]);
  const bits = await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-512", salt: salt as Uint8Array<ArrayBuffer>, iterations }, key, 512);
  return Buffer.from(bits).toString("hex");
}

export async function hashPassword(password: string, iterations: number): Promise<PasswordHash> {
  const salt = crypto.getRandomValues(new Uint8Array(64));
  return { hash: await derive(password, salt, iterations), salt, iterations };
}

const dummySalt = crypto.getRandomValues(new Uint8Array(64));

/**
 * True when `password` matches. With no stored hash (unknown login, user without password) the same
 * derivation runs against a dummy salt and the answer is false, so both cost the same time.
 */
export async function verifyPassword(
  password: string,
  stored: { hash: string | null; salt: Uint8Array | null; iterations: number | null } | null,
  defaultIterations: number,
): Promise<boolean> {
  if (!stored?.hash || !stored.salt) {
    await derive(password, dummySalt, defaultIterations);
    return false;
  }
  const computed = await derive(password, stored.salt, stored.iterations ?? WAZO_ITERATIONS);
  const a = Buffer.from(computed);
  const b = Buffer.from(stored.hash.toLowerCase());
  return a.length === b.length && timingSafeEqual(a, b);
}
