// A software WebAuthn authenticator for API tests (the browser tests use Chromium's virtual one):
// an ES256 key pair from node:crypto, authenticator data laid out as WebAuthn §6.1 says, CBOR and
// COSE through @simplewebauthn/server's own helpers (no hand-written CBOR).
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";
import { isoCBOR } from "@simplewebauthn/server/helpers";

const b64u = (b: Uint8Array) => Buffer.from(b).toString("base64url");
const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest();

export interface SoftAuthenticator {
  credentialId: string;
  counter: number;
  /** WebAuthn §6.1 flags: UV (user verified), BE/BS (backup eligible / backed up: a synced passkey). */
  userVerified: boolean;
  backupEligible: boolean;
  /**
   * WebAuthn §6.3.3: the `user.id` a discoverable credential was created with, returned in every
   * assertion as `userHandle` (base64url); null sends none. Set it to another value to forge one.
   */
  userHandle: string | null;
  register(
    options: { challenge: string; rp: { id?: string }; user?: { id?: string } },
    origin: string,
  ): Record<string, unknown>;
  assert(options: { challenge: string; rpId?: string }, origin: string): Record<string, unknown>;
}

export function softAuthenticator(opts: { userVerified?: boolean; backupEligible?: boolean } = {}): SoftAuthenticator {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const id = randomBytes(16);
  const a: SoftAuthenticator = {
    credentialId: b64u(id),
    counter: 0,
    userVerified: opts.userVerified ?? true,
    backupEligible: opts.backupEligible ?? false,
    userHandle: null,
    register(options, origin) {
      a.userHandle = options.user?.id ?? null;
      const clientData = clientDataJSON("webauthn.create", options.challenge, origin);
      const authData = authenticatorData(a, options.rp.id ?? new URL(origin).hostname, coseKey(publicKey), id);
      const attestationObject = isoCBOR.encode(
        new Map<string, unknown>([
          ["fmt", "none"],
          ["attStmt", new Map()],
          ["authData", authData],
        ]) as never,
      );
      return credentialJson(a, {
        clientDataJSON: b64u(clientData),
        attestationObject: b64u(attestationObject),
        transports: ["internal"],
      });
    },
    assert(options, origin) {
      a.counter += 1;
      const clientData = clientDataJSON("webauthn.get", options.challenge, origin);
      const authData = authenticatorData(a, options.rpId ?? new URL(origin).hostname);
      const signature = sign("sha256", Buffer.concat([authData, sha256(clientData)]), privateKey as KeyObject);
      return credentialJson(a, {
        clientDataJSON: b64u(clientData),
        authenticatorData: b64u(authData),
        signature: b64u(signature),
        ...(a.userHandle === null ? {} : { userHandle: a.userHandle }),
      });
    },
  };
  return a;
}

/** WebAuthn §5.1 `PublicKeyCredential.toJSON()`. */
function credentialJson(a: SoftAuthenticator, response: Record<string, unknown>): Record<string, unknown> {
  return { id: a.credentialId, rawId: a.credentialId, type: "public-key", clientExtensionResults: {}, response };
}

function clientDataJSON(type: string, challenge: string, origin: string): Buffer {
  return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
}

/** RFC 9053 §7.1.1 EC2 key: kty 2, alg -7 (ES256), crv 1 (P-256), x, y. */
function coseKey(publicKey: KeyObject): Uint8Array {
  const jwk = publicKey.export({ format: "jwk" });
  return isoCBOR.encode(
    new Map<number, unknown>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, Buffer.from(jwk.x!, "base64url")],
      [-3, Buffer.from(jwk.y!, "base64url")],
    ]) as never,
  );
}

/** WebAuthn §6.1: rpIdHash ‖ flags ‖ signCount ‖ [attestedCredentialData]. */
function authenticatorData(a: SoftAuthenticator, rpId: string, cose?: Uint8Array, id?: Buffer): Buffer {
  const flags = 0x01 | (a.userVerified ? 0x04 : 0) | (a.backupEligible ? 0x08 | 0x10 : 0) | (cose ? 0x40 : 0);
  const counter = Buffer.alloc(4);
  counter.writeUInt32BE(a.counter);
  const parts: Buffer[] = [sha256(rpId), Buffer.from([flags]), counter];
  if (cose && id) {
    const len = Buffer.alloc(2);
    len.writeUInt16BE(id.length);
    parts.push(Buffer.alloc(16), len, id, Buffer.from(cose));
  }
  return Buffer.concat(parts);
}
