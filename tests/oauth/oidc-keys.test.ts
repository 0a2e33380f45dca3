// OpenID Connect discovery and signing keys (OIDC Discovery 1.0, RFC 7517), read by panva's
// openid-client as a relying party would.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { eq, isNull } from "drizzle-orm";
import { createLocalJWKSet, jwtVerify, SignJWT, type JWK } from "jose";
import * as oidc from "openid-client";
import { oidcKeys } from "../../src/db/schema.ts";
import {
  ensureSigningKeys,
  rotateSigningKeys,
  rotateSigningKeysIfDue,
  signingKey,
} from "../../src/services/oidc/keys.ts";
import { describeEachDb } from "../helpers/app.ts";
import { serveApp, type ServedApp } from "../helpers/oidc.ts";
import { tempDirs } from "../helpers/temp-dirs.ts";

const SECRET = "a-key-encryption-secret-of-at-least-32-characters";
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "k", "oth"];

describeEachDb(
  "OpenID Connect discovery and keys",
  (get) => {
    let served: ServedApp;
    beforeAll(() => {
      served = serveApp(get());
    });
    afterAll(() => served?.stop());

    test("openid-client discovers the provider: the issuer is {public_url}/0.1/oidc and every URL lives under it", async () => {
      const t = get();
      // The configured public_url is another host: discovery through the served app on its own
      // address must still announce the configured issuer.
      const r = await t.request("GET", "/0.1/oidc/.well-known/openid-configuration");
      expect(r.status).toBe(200);
      expect(r.json.issuer).toBe("https://auth.example.com/api/auth/0.1/oidc");
      expect(r.json.jwks_uri).toBe("https://auth.example.com/api/auth/0.1/oidc/jwks");
      expect(r.json.id_token_signing_alg_values_supported).toEqual(["ES256", "RS256"]);
      expect(r.json.id_token_signing_alg_values_supported).not.toContain("none");
      // Only what is implemented is announced (Discovery §3 "supported").
      expect(r.json.grant_types_supported).toEqual([
        "authorization_code",
        "refresh_token",
        "client_credentials",
        "urn:ietf:params:oauth:grant-type:device_code",
        "urn:ietf:params:oauth:grant-type:token-exchange",
      ]);
      expect(r.json.device_authorization_endpoint).toBe(
        "https://auth.example.com/api/auth/0.1/oidc/device_authorization",
      );
      expect(r.json.code_challenge_methods_supported).toEqual(["S256"]);
      expect(r.json.end_session_endpoint).toBe("https://auth.example.com/api/auth/0.1/oidc/logout");
      // The relying-party library's own checks: the issuer it was given must match the document's.
      const wrongIssuer = await oidc
        .discovery(new URL(`${served.url}/0.1/oidc`), "rp", undefined, undefined, {
          execute: [oidc.allowInsecureRequests],
        })
        .then(
          () => null,
          (e: Error) => e.message,
        );
      expect(wrongIssuer).toMatch(/issuer/);
    });

    test("JWKS: one ES256 and one RS256 public key, no private member; what they sign verifies", async () => {
      const t = get();
      const r = await t.request("GET", "/0.1/oidc/jwks");
      expect(r.status).toBe(200);
      const keys = r.json.keys as JWK[];
      expect(keys.map((k) => k.alg).sort()).toEqual(["ES256", "RS256"]);
      for (const k of keys) {
        expect(k.use).toBe("sig");
        expect(typeof k.kid).toBe("string");
        for (const m of PRIVATE_MEMBERS) expect(k).not.toHaveProperty(m);
      }
      const jwks = createLocalJWKSet({ keys });
      for (const alg of ["ES256", "RS256"] as const) {
        const key = await signingKey(t.app, alg);
        const jwt = await new SignJWT({ sub: "s" })
          .setProtectedHeader({ alg, kid: key.kid })
          .setIssuedAt()
          .setExpirationTime("1m")
          .sign(key.privateKey);
        expect((await jwtVerify(jwt, jwks)).payload.sub).toBe("s");
      }
    });

    test("private keys are stored encrypted with the configured key; a wrong key cannot load them", async () => {
      const t = get();
      const rows = await t.app.db.select().from(oidcKeys);
      expect(rows.length).toBe(2);
      for (const row of rows) {
        expect(row.encrypted).toBe(true);
        expect(row.privateKey.startsWith("v1.")).toBe(true);
        expect(row.privateKey).not.toContain('"d"');
      }
      const right = t.app.config.oidc.key_encryption_key;
      t.app.config.oidc.key_encryption_key = "another-secret-of-at-least-32-characters-long";
      try {
        const failure = await ensureSigningKeys(t.app).then(
          () => null,
          (e: Error) => e.message,
        );
        expect(failure).toMatch(/cannot be decrypted/);
      } finally {
        t.app.config.oidc.key_encryption_key = right;
      }
      await ensureSigningKeys(t.app);
    });

    test("rotation: new current keys; the retired ones stay published so what they signed still verifies", async () => {
      const t = get();
      const old = await signingKey(t.app, "ES256");
      const oldJwt = await new SignJWT({ sub: "before" })
        .setProtectedHeader({ alg: "ES256", kid: old.kid })
        .setExpirationTime("1h")
        .sign(old.privateKey);
      const kids = await rotateSigningKeys(t.app);
      const now = await signingKey(t.app, "ES256");
      expect(now.kid).not.toBe(old.kid);
      expect(kids).toContain(now.kid);
      const keys = (await t.request("GET", "/0.1/oidc/jwks")).json.keys as JWK[];
      expect(keys.length).toBe(4);
      expect(keys.map((k) => k.kid)).toContain(old.kid);
      expect((await jwtVerify(oldJwt, createLocalJWKSet({ keys }))).payload.sub).toBe("before");
      // Past its publication time, a retired key leaves the JWKS.
      await t.app.db
        .update(oidcKeys)
        .set({ retiredAt: new Date(Date.now() - 2 * 86_400_000) })
        .where(eq(oidcKeys.kid, old.kid));
      // The JWKS kept in memory hears of the change through its notice (after the commit on PostgreSQL).
      const jwks = async () => (await t.request("GET", "/0.1/oidc/jwks")).json.keys as JWK[];
      let later = await jwks();
      for (let i = 0; i < 300 && later.some((k) => k.kid === old.kid); i++) {
        await Bun.sleep(10);
        later = await jwks();
      }
      expect(later.map((k) => k.kid)).not.toContain(old.kid);
      expect(later.length).toBe(3);
    });

    test("scheduled rotation: only when the current keys are older than oidc.key_rotation_days, and never with 0", async () => {
      const t = get();
      const before = await signingKey(t.app, "RS256");
      expect(await rotateSigningKeysIfDue(t.app)).toBe(false);
      await t.app.db
        .update(oidcKeys)
        .set({ createdAt: new Date(Date.now() - 91 * 86_400_000) })
        .where(isNull(oidcKeys.retiredAt));
      t.app.config.oidc.key_rotation_days = 0;
      expect(await rotateSigningKeysIfDue(t.app)).toBe(false);
      t.app.config.oidc.key_rotation_days = 90;
      expect(await rotateSigningKeysIfDue(t.app)).toBe(true);
      expect((await signingKey(t.app, "RS256")).kid).not.toBe(before.kid);
      expect(await rotateSigningKeysIfDue(t.app)).toBe(false); // fresh again: one rotation only
      const current = await t.app.db.select().from(oidcKeys).where(isNull(oidcKeys.retiredAt));
      expect(current.map((k) => k.alg).sort()).toEqual(["ES256", "RS256"]);
    });
  },
  { config: { public_url: "https://auth.example.com/api/auth", oidc: { key_encryption_key: SECRET } } },
);

/** The reverse proxy of these tests (`rest_api.trusted_proxies`): X-Script-Name is believed from it only. */
const PROXY = "10.20.30.40";

describeEachDb(
  "OpenID Connect discovery without public_url",
  (get) => {
    let served: ServedApp;
    beforeAll(() => {
      served = serveApp(get());
    });
    afterAll(() => served?.stop());

    test("the issuer comes from the request; openid-client accepts the document it discovers", async () => {
      const issuer = `${served.url}/0.1/oidc`;
      const config = await oidc.discovery(new URL(issuer), "rp", undefined, undefined, {
        execute: [oidc.allowInsecureRequests],
      });
      expect(config.serverMetadata().issuer).toBe(issuer);
      expect(config.serverMetadata().jwks_uri).toBe(`${issuer}/jwks`);
      // Behind a prefix (X-Script-Name, sent by a trusted proxy), every URL carries it.
      const r = await get().request("GET", "/0.1/oidc/.well-known/openid-configuration", {
        headers: { "X-Script-Name": "/api/auth" },
        remoteAddr: PROXY,
      });
      expect(r.json.issuer).toBe("http://localhost/api/auth/0.1/oidc");
      // Unencrypted storage without oidc.key_encryption_key (and still never returned).
      const rows = await get().app.db.select().from(oidcKeys);
      expect(rows.every((row) => !row.encrypted)).toBe(true);
    });
  },
  { config: { rest_api: { trusted_proxies: [PROXY] } } },
);

describe("tessera rotate-oidc-keys", () => {
  const tempDir = tempDirs("tessera-oidc-keys-");
  test("replaces the keys of the configured database and prints the new key ids", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "config.yml"), "log_level: error\n");
    const run = async (args: string[]) => {
      const p = Bun.spawn(["node", "bin/tessera.js", ...args], {
        cwd: join(import.meta.dir, "../.."),
        env: {
          ...process.env,
          TESSERA_DATA_DIR: join(dir, "data"),
          TESSERA_CONFIG: join(dir, "config.yml"),
          TESSERA_LOG_LEVEL: "error",
        },
        stdout: "pipe",
        stderr: "pipe",
      });
      const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
      return { code: await p.exited, out, err };
    };
    const first = await run(["rotate-oidc-keys", "--json"]);
    expect([first.code, first.err]).toEqual([0, ""]);
    const second = await run(["rotate-oidc-keys", "--json"]);
    const [a, b] = [JSON.parse(first.out).current_kids as string[], JSON.parse(second.out).current_kids as string[]];
    expect(a.length).toBe(2);
    expect(b.length).toBe(2);
    expect(b.some((k) => a.includes(k))).toBe(false);
  }, 120_000);
});
