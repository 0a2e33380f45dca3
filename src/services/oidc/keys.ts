// The provider's signing keys: one current key per algorithm (ES256, RS256), generated on first
// start and stored in the database so that every instance signs with keys the others publish.
// Private keys are kept in memory for signing (no database read, no key import per token) and
// never leave this module except as CryptoKeys (and a MAC key derived one-way from them); only
// public JWKs are published.
import { createHash, hkdfSync } from "node:crypto";
import { and, desc, gt, isNull, or, sql } from "drizzle-orm";
import type { JWK } from "jose";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { oidcKeys } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { decryptPrivateKey, encryptPrivateKey } from "./key-crypto.ts";

/** JWS algorithms offered (RFC 7518 §3.1); `none` never is (OIDC Core §2, §10.1). */
export const SIGNING_ALGS = ["ES256", "RS256"] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

/**
 * The longest an ID token may live (a client's `id_token_lifetime` is capped to it): a retired key
 * stays in the JWKS this long, so every token it signed can still be verified until it expires.
 */
export const RETIRED_KEY_PUBLISHED_SECONDS = 86_400;

/** How long an instance signs with the keys it loaded before it looks for a newer one (the backstop of the rotation notice). */
const RELOAD_AFTER_MS = 60_000;

export interface SigningKey {
  kid: string;
  alg: SigningAlg;
  privateKey: CryptoKey;
  /**
   * A MAC key derived from this private key (HKDF-SHA-256, RFC 5869): a secret every instance
   * shares (the key is in the database), that only the service holds, and that rotates with it.
   */
  macKey: Buffer;
}

interface Loaded {
  at: number;
  keys: Promise<Map<SigningAlg, SigningKey>>;
}

const loaded = new WeakMap<AppContext, Loaded>();

/** Generates the missing keys and loads the current ones (called at start, so the first login pays nothing). */
export async function ensureSigningKeys(app: AppContext): Promise<void> {
  await currentKeys(app, true);
}

/** A first start's key generation still under way, awaited by whatever reads the keys' rows. */
const generating = new WeakMap<AppContext, Promise<void>>();

/**
 * The service's start (main.ts): loads the current keys, as `ensureSigningKeys` does, unless some
 * must be generated (a first start): generating an RSA key costs a first start 0.1–0.5 s of CPU, so
 * it then continues while the service answers. Nothing can read a missing key meanwhile: signing
 * waits for the keys being made (`currentKeys` holds that promise) and the JWK Set waits for them
 * too. A failed generation is logged and retried by the next signature; closing the context waits
 * for one under way.
 */
export async function prepareSigningKeys(app: AppContext): Promise<void> {
  const rows = await currentRows(app.db);
  if (SIGNING_ALGS.every((alg) => rows.some((r) => r.alg === alg))) return ensureSigningKeys(app);
  const done = currentKeys(app, true).then(
    () => {},
    (e: unknown) =>
      app.log.error("cannot generate the OpenID Connect signing keys", {
        error: e instanceof Error ? e.message : String(e),
      }),
  );
  generating.set(app, done);
  app.onClose.push(async function signingKeyGeneration() {
    await done;
  });
  void done.finally(() => {
    if (generating.get(app) === done) generating.delete(app);
  });
}

/** The key that signs for `alg` now. */
export async function signingKey(app: AppContext, alg: SigningAlg): Promise<SigningKey> {
  const key = (await currentKeys(app)).get(alg);
  if (!key) throw new Error(`no current ${alg} signing key`);
  return key;
}

function currentKeys(app: AppContext, fresh = false): Promise<Map<SigningAlg, SigningKey>> {
  const cached = loaded.get(app);
  if (cached && !fresh && Date.now() - cached.at < RELOAD_AFTER_MS) return cached.keys;
  const keys = loadOrGenerate(app);
  // A failed load (database outage) is retried by the next caller; until a reload succeeds, the
  // keys already in memory keep signing.
  const entry: Loaded = { at: Date.now(), keys };
  loaded.set(app, entry);
  keys.catch(() => {
    if (loaded.get(app) === entry) {
      if (cached) loaded.set(app, cached);
      else loaded.delete(app);
    }
  });
  return keys;
}

async function loadOrGenerate(app: AppContext): Promise<Map<SigningAlg, SigningKey>> {
  let rows = await currentRows(app.db);
  if (missingAlgs(rows).length) {
    await generateMissingKeys(app);
    rows = await currentRows(app.db);
  }
  const out = new Map<SigningAlg, SigningKey>();
  for (const row of rows) {
    const alg = row.alg as SigningAlg;
    if (out.has(alg)) continue; // rows are newest first
    const jwk = JSON.parse(
      row.encrypted ? await decryptPrivateKey(requireSecret(app, row.kid), row.kid, row.privateKey) : row.privateKey,
    ) as JWK;
    out.set(alg, { kid: row.kid, alg, privateKey: await importSigningKey(jwk, alg), macKey: macKeyOf(jwk, row.kid) });
  }
  return out;
}

const missingAlgs = (rows: Array<{ alg: string }>) => SIGNING_ALGS.filter((alg) => !rows.some((r) => r.alg === alg));

/** pg_advisory_xact_lock key of the signing keys' writes (first generation, rotation). */
const SIGNING_KEYS_LOCK = 7_302_515_979;

/** Serialises the signing keys' writes with every instance on the database (PGlite: a no-op lock). */
async function lockSigningKeys(tx: DbOrTx): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(${SIGNING_KEYS_LOCK})`);
}

/** A generation of the missing keys under way in this process, which every other caller joins. */
const generationsUnderWay = new WeakMap<AppContext, Promise<void>>();

/**
 * Generates the keys no current row holds, once: callers of this process share one generation
 * (a first start's background generation, a signature, a reload after a notice), and instances
 * starting together on one database take turns under an advisory lock, each reading the rows again
 * once it holds it, so a first start stores exactly one key per algorithm. The key pairs are made
 * before the transaction (RSA costs 0.1–0.5 s of CPU) and dropped if another instance stored its own.
 */
function generateMissingKeys(app: AppContext): Promise<void> {
  const underWay = generationsUnderWay.get(app);
  if (underWay) return underWay;
  const generation = (async () => {
    const made = await Promise.all(missingAlgs(await currentRows(app.db)).map((alg) => newKeyRow(app, alg)));
    const stored = await inTransaction(app, async (tx) => {
      await lockSigningKeys(tx);
      const missing = missingAlgs(await currentRows(tx));
      const rows = made.filter((row) => missing.includes(row.alg));
      for (const alg of missing) if (!rows.some((r) => r.alg === alg)) rows.push(await newKeyRow(app, alg));
      if (rows.length) await tx.insert(oidcKeys).values(rows);
      return rows.map((r) => r.alg);
    });
    if (stored.length) app.log.info("generated OpenID Connect signing keys", { algorithms: stored });
  })().finally(() => {
    if (generationsUnderWay.get(app) === generation) generationsUnderWay.delete(app);
  });
  generationsUnderWay.set(app, generation);
  return generation;
}

/** The MAC key of a private JWK: its private part (`d`) through HKDF, never the signing key itself. */
function macKeyOf(jwk: JWK, kid: string): Buffer {
  if (!jwk.d) throw new Error(`the stored OIDC signing key ${kid} has no private part`);
  return Buffer.from(hkdfSync("sha256", Buffer.from(jwk.d, "base64url"), "tessera-mac-key", kid, 32));
}

/**
 * The service's MAC key (the hosted pages' CSRF tokens, web/pages/browser.ts): derived from the
 * current ES256 signing key, so it is the same on every instance without another secret to configure.
 */
export async function serviceMacKey(app: AppContext): Promise<Buffer> {
  return (await signingKey(app, "ES256")).macKey;
}

function requireSecret(app: AppContext, kid: string): string {
  const secret = app.config.oidc.key_encryption_key;
  if (!secret)
    throw new Error(`the OIDC signing key ${kid} is stored encrypted but oidc.key_encryption_key is not configured`);
  return secret;
}

function currentRows(db: DbOrTx) {
  return db
    .select()
    .from(oidcKeys)
    .where(isNull(oidcKeys.retiredAt))
    .orderBy(desc(oidcKeys.createdAt), desc(oidcKeys.kid));
}

/**
 * A stored private JWK as a signing key (WebCrypto, RFC 7518 §3.3 RS256 and §3.4 ES256): a restart
 * loads its keys without jose, which is imported when a key is generated or a token signed.
 */
function importSigningKey(jwk: JWK, alg: SigningAlg): Promise<CryptoKey> {
  const algorithm =
    alg === "ES256" ? { name: "ECDSA", namedCurve: "P-256" } : { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
  return crypto.subtle.importKey("jwk", jwk as JsonWebKey, algorithm, false, ["sign"]);
}

/** A new key pair for `alg`, as the row that stores it (the private JWK encrypted when a key is configured). */
async function newKeyRow(
  app: AppContext,
  alg: SigningAlg,
): Promise<typeof oidcKeys.$inferInsert & { alg: SigningAlg }> {
  const { calculateJwkThumbprint, exportJWK, generateKeyPair } = await import("jose");
  const { publicKey, privateKey } = await generateKeyPair(alg, {
    extractable: true,
    ...(alg === "RS256" ? { modulusLength: 2048 } : {}),
  });
  const publicJwk = await exportJWK(publicKey);
  // RFC 7638 thumbprint as the key id: stable, unique, derived from the public key alone.
  const kid = await calculateJwkThumbprint(publicJwk);
  const privateJson = JSON.stringify(await exportJWK(privateKey));
  const secret = app.config.oidc.key_encryption_key;
  return {
    kid,
    alg,
    publicJwk: { ...publicJwk, kid, alg, use: "sig" },
    privateKey: secret ? await encryptPrivateKey(secret, kid, privateJson) : privateJson,
    encrypted: secret !== null,
  };
}

/**
 * Rotation: a new current key per algorithm; the previous ones are retired but stay published for
 * `RETIRED_KEY_PUBLISHED_SECONDS`. Other instances publish and sign with the new keys once they hear
 * the change (`tessera_oidc_changed`), within a minute if the notice was missed (tokens verify fine
 * meanwhile: both keys are published).
 */
export async function rotateSigningKeys(app: AppContext): Promise<string[]> {
  await inTransaction(app, async (tx) => {
    await lockSigningKeys(tx);
    await retireAndReplace(app, tx);
  });
  return reloadAfterRotation(app);
}

/**
 * The scheduled rotation: rotates when the current keys are older than `oidc.key_rotation_days`
 * (0 = never). The current rows are locked first, so of several instances checking at once one
 * rotates and the others find fresh keys.
 */
export async function rotateSigningKeysIfDue(app: AppContext): Promise<boolean> {
  const days = app.config.oidc.key_rotation_days;
  if (days <= 0) return false;
  const cutoff = Date.now() - days * 86_400_000;
  const rotated = await inTransaction(app, async (tx) => {
    await lockSigningKeys(tx);
    const current = await tx
      .select({ createdAt: oidcKeys.createdAt })
      .from(oidcKeys)
      .where(isNull(oidcKeys.retiredAt))
      .for("update");
    if (current.length === 0 || current.some((k) => k.createdAt.getTime() > cutoff)) return false;
    await retireAndReplace(app, tx);
    return true;
  });
  if (rotated) await reloadAfterRotation(app);
  return rotated;
}

/** Run under `lockSigningKeys`, taken first by its transaction (before any row lock: no deadlock). */
async function retireAndReplace(app: AppContext, tx: DbOrTx): Promise<void> {
  await tx.update(oidcKeys).set({ retiredAt: new Date() }).where(isNull(oidcKeys.retiredAt));
  for (const alg of SIGNING_ALGS) await tx.insert(oidcKeys).values(await newKeyRow(app, alg));
}

async function reloadAfterRotation(app: AppContext): Promise<string[]> {
  signingKeysChanged(app); // at once here; the other instances when they hear the notice
  const keys = await currentKeys(app, true);
  app.log.info("rotated the OpenID Connect signing keys");
  return [...keys.values()].map((k) => k.kid);
}

/** The JWK Set of `jwks_uri` (RFC 7517 §5): current keys, and retired ones still within their publication time. */
export async function publicJwks(app: AppContext): Promise<{ keys: JWK[] }> {
  return JSON.parse((await jwksDocument(app)).body) as { keys: JWK[] };
}

/** The JWK Set as served: its JSON, a strong entity tag of it (RFC 9110 §8.8.3), and until when it holds. */
export interface JwksDocument {
  body: string;
  etag: string;
  /** When the oldest retired key in it leaves publication (the set changes then without any write). */
  until: number;
}

interface JwksCache {
  doc: JwksDocument | null;
  /** Bumped by every change heard: a read begun before it is not kept. */
  epoch: number;
}
const jwksCaches = new WeakMap<AppContext, JwksCache>();
const jwksCacheOf = (app: AppContext) => jwksCaches.get(app) ?? jwksCaches.set(app, { doc: null, epoch: 0 }).get(app)!;

/**
 * The JWK Set from memory, or null when it must be read: not read yet, changed since (a rotation on
 * any instance, heard through `tessera_oidc_changed`), a retired key's publication over, or
 * notifications possibly missed (the token cache's trust, which it shares).
 */
export function cachedJwks(app: AppContext): JwksDocument | null {
  const doc = jwksCacheOf(app).doc;
  return doc && Date.now() < doc.until && app.tokenCache.isTrusted ? doc : null;
}

/** The JWK Set, read from the database when memory does not hold it (one read per change). */
export async function jwksDocument(app: AppContext): Promise<JwksDocument> {
  const cached = cachedJwks(app);
  if (cached) return cached;
  await generating.get(app); // a first start's keys, still being made
  const cache = jwksCacheOf(app);
  const epoch = cache.epoch;
  const now = Date.now();
  const publishedMs = RETIRED_KEY_PUBLISHED_SECONDS * 1000;
  const rows = await app.db
    .select({ jwk: oidcKeys.publicJwk, retiredAt: oidcKeys.retiredAt })
    .from(oidcKeys)
    .where(and(or(isNull(oidcKeys.retiredAt), gt(oidcKeys.retiredAt, new Date(now - publishedMs)))))
    .orderBy(desc(oidcKeys.createdAt));
  const body = JSON.stringify({ keys: rows.map((r) => r.jwk as JWK) });
  const until = Math.min(
    Number.POSITIVE_INFINITY,
    ...rows.flatMap((r) => (r.retiredAt ? [r.retiredAt.getTime() + publishedMs] : [])),
  );
  const doc = { body, etag: `"${createHash("sha256").update(body).digest("base64url")}"`, until };
  if (cache.epoch === epoch && app.tokenCache.isTrusted) cache.doc = doc;
  return doc;
}

/**
 * The signing keys changed (a rotation by this or another instance), or may have (notifications
 * were missed): the JWK Set is read again, and so are the signing keys on their next use (those in
 * memory keep signing if that read fails).
 */
export function signingKeysChanged(app: AppContext): void {
  const cache = jwksCacheOf(app);
  cache.epoch++;
  cache.doc = null;
  const keys = loaded.get(app);
  if (keys) keys.at = 0;
}
