// The service provider's signing key pair (it signs AuthnRequests and LogoutRequests). Every
// instance must sign with the same key, so it comes from `saml.key_file`/`saml.cert_file` when set,
// else from the database, where the first instance to need it stores a generated pair.
import { generateKeyPair } from "node:crypto";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import type { AppContext } from "../../../boot/context.ts";
import { samlSpKeys } from "../../../db/schema.ts";

export interface SpKeyPair {
  privateKey: string;
  certificate: string;
}

let cached: WeakMap<AppContext, Promise<SpKeyPair>> = new WeakMap();

/** The SP key pair; read once per process (it never changes while the service runs). */
export function spKeyPair(app: AppContext): Promise<SpKeyPair> {
  let pair = cached.get(app);
  if (!pair) {
    pair = loadKeyPair(app);
    pair.catch(() => cached.delete(app)); // a database outage is retried on the next request
    cached.set(app, pair);
  }
  return pair;
}

/** For tests that replace the stored pair. */
export function forgetSpKeyPair(): void {
  cached = new WeakMap();
}

async function loadKeyPair(app: AppContext): Promise<SpKeyPair> {
  const { key_file, cert_file } = app.config.saml;
  if (key_file && cert_file) {
    return { privateKey: await readFile(key_file, "utf8"), certificate: await readFile(cert_file, "utf8") };
  }
  const [stored] = await app.db.select().from(samlSpKeys);
  if (stored) return { privateKey: stored.privateKey, certificate: stored.certificate };
  const generated = await generateSelfSigned("Tessera SAML service provider");
  // Two instances may race on first use: the first insert wins and both read it back.
  await app.db
    .insert(samlSpKeys)
    .values({ id: 1, ...generated })
    .onConflictDoNothing();
  const [row] = await app.db.select().from(samlSpKeys);
  app.log.info("generated the SAML service provider key pair");
  return { privateKey: row!.privateKey, certificate: row!.certificate };
}

/**
 * An RSA-2048 key (node:crypto, off the event loop) and a 10-year self-signed certificate for it.
 * node:crypto parses certificates but cannot make one, so a library builds it: node-forge, loaded
 * only here, once per deployment (the pair is stored), and never when `saml.cert_file` is set. Kept
 * over @peculiar/x509 (WebCrypto-based, but it brings nine @peculiar/asn1 packages, tsyringe and
 * tslib) and over hand-written DER, which the project does not write.
 */
export async function generateSelfSigned(commonName: string): Promise<SpKeyPair> {
  const { privateKey, publicKey } = await promisify(generateKeyPair)("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  const { default: forge } = await import("node-forge"); // only ever needed on the first start
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey);
  cert.serialNumber = `01${forge.util.bytesToHex(forge.random.getBytesSync(15))}`;
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 10 * 365 * 86_400_000);
  const subject = [{ name: "commonName", value: commonName }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.sign(forge.pki.privateKeyFromPem(privateKey), forge.md.sha256.create());
  return { privateKey, certificate: forge.pki.certificateToPem(cert) };
}
