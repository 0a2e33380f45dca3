// Password hashes. New hashes use the configured algorithm (`password_hash_algorithm`):
// - `argon2id` (default): a PHC string in `password_hash`, `password_salt` NULL;
// - `pbkdf2_sha512`: wazo-auth's exact format (wazo-auth's password hashes) — PBKDF2-HMAC-SHA512, 64-byte
//   random salt in `password_salt`, 64-byte key as lowercase hex — so wazo-auth can read the
//   database again (the rollback setting). `password_iterations` stays NULL at wazo-auth's 250,000.
// Both formats always verify; the algorithm is read from the stored value. Every derivation runs
// off the event loop, on the password-hashing threads (auth/hash-pool.ts).
import { timingSafeEqual } from "node:crypto";
import type { Config } from "../../config/config.ts";
import { argon2Hash, argon2ParamsOf, argon2Verify, type Argon2Params } from "./argon2.ts";
import { hashPool } from "./hash-pool.ts";

export const WAZO_ITERATIONS = 250_000;
/** OWASP's minimum for argon2id (Password Storage Cheat Sheet): 19 MiB, t=2, p=1. */
export const ARGON2_MIN: Argon2Params = { memoryKib: 19_456, timeCost: 2 };

export interface PasswordHash {
  hash: string;
  salt: Uint8Array | null;
  iterations: number | null;
}

export interface StoredPassword {
  hash: string | null;
  salt: Uint8Array | null;
  iterations: number | null;
}

type HashConfig = Pick<
  Config,
  | "password_hash_algorithm"
  | "password_hash_iterations"
  | "argon2"
  | "password_hash_concurrency"
  | "password_hash_queue"
>;

function argon2Params(config: HashConfig): Argon2Params {
  return { memoryKib: config.argon2.memory_kib, timeCost: config.argon2.time_cost };
}

/** PBKDF2-HMAC-SHA512, 64-byte key as lowercase hex (wazo-auth's format). */
async function pbkdf2(password: string, salt: Uint8Array, iterations: number, config: HashConfig): Promise<string> {
  return (await hashPool(config).run({ op: "pbkdf2", password, salt, iterations })) as string;
}

export async function hashPassword(password: string, config: HashConfig): Promise<PasswordHash> {
  if (config.password_hash_algorithm === "argon2id") {
    return { hash: await argon2Hash(password, argon2Params(config), config), salt: null, iterations: null };
  }
  const salt = crypto.getRandomValues(new Uint8Array(64));
  const iterations = config.password_hash_iterations;
  return {
    hash: await pbkdf2(password, salt, iterations, config),
    salt,
    iterations: iterations === WAZO_ITERATIONS ? null : iterations,
  };
}

const dummySalt = crypto.getRandomValues(new Uint8Array(64));
const dummyArgon2 = new Map<string, Promise<string>>();

/** The same work a real verification does with the configured algorithm, for absent hashes. */
async function dummyVerification(password: string, config: HashConfig): Promise<void> {
  if (config.password_hash_algorithm === "pbkdf2_sha512") {
    await pbkdf2(password, dummySalt, config.password_hash_iterations, config);
    return;
  }
  const params = argon2Params(config);
  const key = `${params.memoryKib}:${params.timeCost}`;
  let phc = dummyArgon2.get(key);
  if (!phc) {
    dummyArgon2.set(key, (phc = argon2Hash(crypto.randomUUID(), params, config)));
    phc.catch(() => dummyArgon2.delete(key)); // a refused derivation (503) is retried next time
  }
  await argon2Verify(password, await phc, config);
}

/**
 * True when `password` matches. With no stored hash (unknown login, user without password) the
 * configured algorithm runs against a dummy and the answer is false, so both cost the same time.
 */
export async function verifyPassword(
  password: string,
  stored: StoredPassword | null,
  config: HashConfig,
): Promise<boolean> {
  if (stored?.hash?.startsWith("$argon2")) return argon2Verify(password, stored.hash, config);
  if (!stored?.hash || !stored.salt) {
    await dummyVerification(password, config);
    return false;
  }
  const computed = Buffer.from(await pbkdf2(password, stored.salt, stored.iterations ?? WAZO_ITERATIONS, config));
  const expected = Buffer.from(stored.hash.toLowerCase());
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}

/** True when a matching stored hash is not what the configuration would write today. */
export function needsRehash(stored: StoredPassword, config: HashConfig): boolean {
  if (!stored.hash) return false;
  if (config.password_hash_algorithm === "argon2id") {
    const params = argon2ParamsOf(stored.hash);
    const wanted = argon2Params(config);
    return !params || params.memoryKib !== wanted.memoryKib || params.timeCost !== wanted.timeCost;
  }
  if (stored.hash.startsWith("$") || !stored.salt) return true;
  return (stored.iterations ?? WAZO_ITERATIONS) !== config.password_hash_iterations;
}

/** Start-up warnings about weak or non-rollback-safe hashing settings. */
export function hashingWarnings(config: HashConfig): string[] {
  const warnings: string[] = [];
  if (config.password_hash_algorithm === "argon2id") {
    const p = argon2Params(config);
    if (p.memoryKib < ARGON2_MIN.memoryKib || p.timeCost < ARGON2_MIN.timeCost) {
      warnings.push(
        `argon2 parameters (memory_kib ${p.memoryKib}, time_cost ${p.timeCost}) are below OWASP's minimum (${ARGON2_MIN.memoryKib}, ${ARGON2_MIN.timeCost}): for tests only`,
      );
    }
  } else if (config.password_hash_iterations !== WAZO_ITERATIONS) {
    warnings.push(
      `password_hash_iterations is ${config.password_hash_iterations}: wazo-auth verifies only ${WAZO_ITERATIONS}, so new hashes will not work after a rollback`,
    );
  }
  return warnings;
}
