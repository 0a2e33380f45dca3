// Encryption of the stored private signing keys (AES-256-GCM, WebCrypto), with a key derived by
// HKDF-SHA-256 (RFC 5869) from `oidc.key_encryption_key`. A stored value is `v1.{iv}.{ciphertext}`
// in base64url; the key id is the additional authenticated data, so a row's ciphertext cannot be
// moved to another row.

const derived = new Map<string, Promise<CryptoKey>>();

function wrappingKey(secret: string): Promise<CryptoKey> {
  let key = derived.get(secret);
  if (!key) {
    key = (async () => {
      const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), "HKDF", false, [
        "deriveKey",
      ]);
      return crypto.subtle.deriveKey(
        {
          name: "HKDF",
          hash: "SHA-256",
          salt: new TextEncoder().encode("tessera-oidc-signing-keys"),
          info: new Uint8Array(),
        },
        material,
        { name: "AES-GCM", length: 256 },
        false,
        ["encrypt", "decrypt"],
      );
    })();
    derived.set(secret, key);
  }
  return key;
}

export async function encryptPrivateKey(secret: string, kid: string, plaintext: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const data = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(kid) },
    await wrappingKey(secret),
    new TextEncoder().encode(plaintext),
  );
  return `v1.${Buffer.from(iv).toString("base64url")}.${Buffer.from(data).toString("base64url")}`;
}

export async function decryptPrivateKey(secret: string, kid: string, stored: string): Promise<string> {
  const [version, iv, data] = stored.split(".");
  if (version !== "v1" || !iv || !data)
    throw new Error(`the stored OIDC signing key ${kid} is not in a known encrypted form`);
  try {
    const plain = await crypto.subtle.decrypt(
      {
        name: "AES-GCM",
        iv: new Uint8Array(Buffer.from(iv, "base64url")),
        additionalData: new TextEncoder().encode(kid),
      },
      await wrappingKey(secret),
      new Uint8Array(Buffer.from(data, "base64url")),
    );
    return new TextDecoder().decode(plain);
  } catch {
    throw new Error(
      `the OIDC signing key ${kid} cannot be decrypted: oidc.key_encryption_key is not the one it was stored with`,
    );
  }
}
