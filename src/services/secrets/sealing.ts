// Secrets Tessera must give back to someone else (an upstream provider's client secret) sealed at rest:
// AES-256-GCM under the key of `secret_sealing.key_file` (docs/federation.md "Client secrets at rest"),
// with the owning row's uuid as the additional data, so a sealed value copied to another row does not
// open. The cipher is the MFA secrets' (services/auth/mfa-crypto.ts); the key id is a digest of the key,
// so a value sealed under another key is named, not mis-decrypted. Values stored in clear (before a key
// was configured) stay readable. The key is read once and never logged; a key file that cannot be read
// is a clear start-up error (boot checks call `sealingKey`).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { AppContext } from "../../boot/context.ts";
import { ServiceUnavailable } from "../../domain/errors.ts";
import { decryptSecret, encryptSecret, type KeyRing } from "../auth/mfa-crypto.ts";

const PREFIX = "sealed:";
const rings = new WeakMap<AppContext, KeyRing | null>();

const unavailable = (message: string) => new ServiceUnavailable("secrets", message, "secret-sealing");

/** The sealing key of the configuration, or null when none is configured. */
export function sealingKey(app: AppContext): KeyRing | null {
  if (rings.has(app)) return rings.get(app)!;
  const path = app.config.secret_sealing.key_file;
  let ring: KeyRing | null = null;
  if (path) {
    let key: Buffer;
    try {
      key = Buffer.from(readFileSync(path, "utf8").trim(), "base64");
    } catch (e) {
      throw unavailable(`secret_sealing.key_file cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"})`);
    }
    if (key.length !== 32) throw unavailable("secret_sealing.key_file does not hold the base64 of 32 bytes");
    const id = createHash("sha256").update(key).digest("hex").slice(0, 12);
    ring = { current: { id, key }, byId: new Map([[id, key]]) };
  }
  rings.set(app, ring);
  return ring;
}

/** The value as stored: sealed when a key is configured, else as given. */
export function seal(app: AppContext, value: string, ownerUuid: string): string {
  const ring = sealingKey(app);
  return ring ? `${PREFIX}${encryptSecret(ring, value, ownerUuid)}` : value;
}

/** The stored value opened (a clear one as it is); a value sealed under a key not configured: 503. */
export function unseal(app: AppContext, stored: string, ownerUuid: string): string {
  if (!stored.startsWith(PREFIX)) return stored;
  const body = stored.slice(PREFIX.length);
  const ring = sealingKey(app);
  if (!ring?.byId.has(body.slice(0, body.indexOf(":"))))
    throw unavailable("a secret is sealed under a key that is not configured (secret_sealing.key_file)");
  try {
    return decryptSecret(ring, body, ownerUuid).secret;
  } catch {
    throw unavailable("a sealed secret does not open under the configured key (secret_sealing.key_file)");
  }
}
