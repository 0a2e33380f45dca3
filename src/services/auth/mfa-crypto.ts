// Encryption at rest of TOTP secrets: AES-256-GCM (node:crypto) under the keys of `mfa.encryption_keys`.
// The first key encrypts; any key decrypts the values stored under its id (rotation). The user uuid
// is the GCM additional data, so a ciphertext copied to another user's row does not decrypt.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AppContext } from "../../boot/context.ts";
import { ServiceUnavailable } from "../../domain/errors.ts";

export interface KeyRing {
  current: { id: string; key: Buffer };
  byId: Map<string, Buffer>;
}

const GENERATED_KEY_FILE = "mfa-encryption.key";
const rings = new WeakMap<AppContext, KeyRing>();

function decodeKey(id: string, encoded: string): Buffer {
  const key = Buffer.from(encoded, "base64");
  if (key.length !== 32)
    throw new ServiceUnavailable(
      "mfa",
      `mfa.encryption_keys: key "${id}" is not the base64 of 32 bytes`,
      "mfa-not-configured",
    );
  return key;
}

/**
 * The configured keys; else, on PGlite (one process owns the data directory), a key generated once
 * beside the database; else (PostgreSQL, several instances) a 503: a key that only one instance
 * knew would lock every other instance's users out.
 */
export function keyRing(app: AppContext): KeyRing {
  const known = rings.get(app);
  if (known) return known;
  let entries = app.config.mfa.encryption_keys.map((k) => ({ id: k.id, key: decodeKey(k.id, k.key) }));
  if (entries.length === 0) {
    if (app.database.kind !== "pglite") {
      throw new ServiceUnavailable(
        "mfa",
        "Multi-factor authentication needs mfa.encryption_keys in the configuration",
        "mfa-not-configured",
      );
    }
    entries = [{ id: "generated", key: generatedKey(app.config.data_dir) }];
  }
  const ring = { current: entries[0]!, byId: new Map(entries.map((e) => [e.id, e.key])) };
  rings.set(app, ring);
  return ring;
}

function generatedKey(dataDir: string): Buffer {
  const path = join(dataDir, GENERATED_KEY_FILE);
  if (existsSync(path)) return decodeKey("generated", readFileSync(path, "utf8").trim());
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(path, `${randomBytes(32).toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(path, 0o600);
  return decodeKey("generated", readFileSync(path, "utf8").trim());
}

export function encryptSecret(ring: KeyRing, secret: string, userUuid: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", ring.current.key, iv);
  cipher.setAAD(Buffer.from(userUuid));
  const body = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
  return `${ring.current.id}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64")}`;
}

/** The secret, and whether it should be re-encrypted under the current key. */
export function decryptSecret(ring: KeyRing, stored: string, userUuid: string): { secret: string; stale: boolean } {
  const colon = stored.indexOf(":");
  const id = stored.slice(0, colon);
  const key = ring.byId.get(id);
  if (colon < 0 || !key)
    throw new ServiceUnavailable(
      "mfa",
      `The MFA secret of this user is encrypted under key "${id}", which is not configured`,
      "mfa-not-configured",
    );
  const raw = Buffer.from(stored.slice(colon + 1), "base64");
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(userUuid));
  decipher.setAuthTag(raw.subarray(12, 28));
  const secret = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
  return { secret, stale: id !== ring.current.id };
}
