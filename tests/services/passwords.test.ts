// Password hashing (issue 15): argon2id for new hashes, wazo-auth's PBKDF2-SHA512 still verified,
// rehash on a successful login when the stored format differs from the configured one, and the
// `pbkdf2_sha512` rollback setting writing wazo-auth's exact format.
import { expect, test } from "bun:test";
import { pbkdf2Sync } from "node:crypto";
import { eq } from "drizzle-orm";
import { parseConfig } from "../../src/config/config.ts";
import { users } from "../../src/db/schema.ts";
import { hashingWarnings, hashPassword, needsRehash, verifyPassword } from "../../src/services/auth/passwords.ts";
import { describeEachDb, TEST_ARGON2 } from "../helpers/app.ts";
import { adminToken } from "../helpers/fixtures.ts";

const basic = (login: string, password: string) => `Basic ${Buffer.from(`${login}:${password}`).toString("base64")}`;

// The bootstrap administrator of tests/fixtures/wazo-auth-db, hashed by wazo-auth itself.
const WAZO_ADMIN = {
  password: "adminpass",
  hash: "a9948165d679f05c621ab7c2cd78a2b8605ff75e73ae89dbcaa8ad46cecd8cdc48f4978c892b86c50c76d355f1ea36f86c863fbeb2b6606573be7eefaf7966f5",
  salt: Buffer.from(
    "cdfcd95614cd237bc020f51b9263271dce9cdb4c21f25f88b02b655d1febeb7b8b51260e2fe0e32f850e3921f2d0e3cdd3e56c752f0f9ebc5319b0d3c9d3ae43",
    "hex",
  ),
};

test("defaults: argon2id at OWASP's minimum, no warning; lower costs or non-wazo PBKDF2 warn", () => {
  const config = parseConfig({});
  expect(config.password_hash_algorithm).toBe("argon2id");
  expect(config.argon2).toEqual({ memory_kib: 19456, time_cost: 2 });
  expect(hashingWarnings(config)).toEqual([]);
  expect(hashingWarnings(parseConfig({ argon2: TEST_ARGON2 }))[0]).toContain("below OWASP's minimum");
  expect(hashingWarnings(parseConfig({ password_hash_algorithm: "pbkdf2_sha512" }))).toEqual([]);
  expect(
    hashingWarnings(parseConfig({ password_hash_algorithm: "pbkdf2_sha512", password_hash_iterations: 1000 }))[0],
  ).toContain("rollback");
  expect(() => parseConfig({ password_hash_algorithm: "md5" })).toThrow("password_hash_algorithm");
});

test("argon2id hashes are PHC strings without salt column; wazo-auth's hashes still verify", async () => {
  const config = parseConfig({ argon2: TEST_ARGON2 });
  const h = await hashPassword("pw", config);
  expect(h.hash).toMatch(/^\$argon2id\$v=19\$m=256,t=1,p=1\$/);
  expect(h.salt).toBeNull();
  expect(await verifyPassword("pw", h, config)).toBe(true);
  expect(await verifyPassword("nope", h, config)).toBe(false);
  const wazo = { hash: WAZO_ADMIN.hash, salt: WAZO_ADMIN.salt, iterations: null };
  expect(await verifyPassword(WAZO_ADMIN.password, wazo, config)).toBe(true);
  expect(await verifyPassword("adminpas", wazo, config)).toBe(false);
  expect(needsRehash(wazo, config)).toBe(true);
  expect(needsRehash(h, config)).toBe(false);
  expect(needsRehash(h, { ...config, argon2: { memory_kib: 512, time_cost: 1 } })).toBe(true);
  expect(await verifyPassword("pw", null, config)).toBe(false);
  expect(await verifyPassword("pw", { hash: "$argon2id$garbage", salt: null, iterations: null }, config)).toBe(false);
});

test("pbkdf2_sha512 writes wazo-auth's exact format (250,000 iterations, 64-byte salt, hex)", async () => {
  const config = parseConfig({ password_hash_algorithm: "pbkdf2_sha512" });
  const h = await hashPassword("rollback-pw", config);
  expect(h.hash).toMatch(/^[0-9a-f]{128}$/);
  expect(h.salt?.length).toBe(64);
  expect(h.iterations).toBeNull(); // NULL = wazo-auth's fixed 250,000
  // What wazo-auth computes (hashlib.pbkdf2_hmac('sha512', pw, salt, 250000).hex())
  expect(pbkdf2Sync("rollback-pw", h.salt!, 250_000, 64, "sha512").toString("hex")).toBe(h.hash);
});

describeEachDb(
  "password rehash on login",
  (get) => {
    const login = (username: string, password: string) =>
      get().request("POST", "/0.1/token", { body: {}, headers: { Authorization: basic(username, password) } });
    const stored = async (username: string) =>
      (await get().app.db.select().from(users).where(eq(users.username, username)))[0]!;

    test("a wazo-auth PBKDF2 hash becomes argon2id at the first successful login, not on a failed one", async () => {
      const t = get();
      const admin = await adminToken(t.app);
      const created = await t.request("POST", "/0.1/users", {
        token: admin,
        body: { username: "legacy", password: "x" },
      });
      expect(created.status).toBe(200);
      await t.app.db
        .update(users)
        .set({ passwordHash: WAZO_ADMIN.hash, passwordSalt: WAZO_ADMIN.salt, passwordIterations: null })
        .where(eq(users.username, "legacy"));
      expect((await login("legacy", "wrong")).status).toBe(401);
      expect((await stored("legacy")).passwordHash).toBe(WAZO_ADMIN.hash);
      expect((await login("legacy", WAZO_ADMIN.password)).status).toBe(200);
      const after = await stored("legacy");
      expect(after.passwordHash).toMatch(/^\$argon2id\$v=19\$m=256,t=1,p=1\$/);
      expect(after.passwordSalt).toBeNull();
      expect((await login("legacy", WAZO_ADMIN.password)).status).toBe(200);
    });

    test("new argon2 parameters rehash at login; the rollback setting rehashes back to wazo-auth's format", async () => {
      const t = get();
      const admin = await adminToken(t.app);
      expect(
        (await t.request("POST", "/0.1/users", { token: admin, body: { username: "mover", password: "m0ve" } })).status,
      ).toBe(200);
      expect((await stored("mover")).passwordHash).toContain("m=256,t=1");
      t.app.config.argon2 = { memory_kib: 512, time_cost: 1 };
      try {
        expect((await login("mover", "m0ve")).status).toBe(200);
        expect((await stored("mover")).passwordHash).toContain("m=512,t=1");
        t.app.config.password_hash_algorithm = "pbkdf2_sha512";
        t.app.config.password_hash_iterations = 250_000;
        expect((await login("mover", "m0ve")).status).toBe(200);
        const row = await stored("mover");
        expect(row.passwordIterations).toBeNull();
        expect(pbkdf2Sync("m0ve", row.passwordSalt!, 250_000, 64, "sha512").toString("hex")).toBe(row.passwordHash!);
      } finally {
        t.app.config.argon2 = TEST_ARGON2;
        t.app.config.password_hash_algorithm = "argon2id";
        t.app.config.password_hash_iterations = 1000;
      }
    });
  },
  // wazo-auth's PBKDF2 cost takes seconds under load: no 503 from the request deadline (tested in outage.test.ts).
  { config: { db_timeout: 60 } },
);
