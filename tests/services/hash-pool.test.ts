// Password derivations on their own bounded, low-priority threads (src/services/auth/hash-pool.ts):
// the bound holds, a full queue is a quick 503 that is never counted as a failed login, the threads
// run below the event loop's priority, and the results are the same hashes as before.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { pbkdf2Sync } from "node:crypto";
import { loginThrottle } from "../../src/db/schema.ts";
import { HashingUnavailable, HashPool, hashPool } from "../../src/services/auth/hash-pool.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createUserRow } from "../helpers/fixtures.ts";

/** Long enough (tens of ms) that jobs submitted together are still running when the next arrives. */
const SLOW = { op: "argon2_hash", password: "slow", memoryKib: 32_768, timeCost: 3 } as const;

test("at most `threads` derivations run, at most `queueLimit` wait, the next is refused at once", async () => {
  const pool = new HashPool(1, 1);
  try {
    await pool.run({ op: "argon2_verify", password: "", phc: "" }); // the thread has started
    const running = pool.run(SLOW);
    const queued = pool.run(SLOW);
    const started = performance.now();
    const refused = await pool.run(SLOW).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HashingUnavailable);
    expect((refused as HashingUnavailable).status).toBe(503);
    expect(performance.now() - started).toBeLessThan(20); // refused without waiting for a thread
    expect(pool.load.waiting).toBe(1);
    const [a, b] = await Promise.all([running, queued]);
    expect(a).toMatch(/^\$argon2id\$v=19\$m=32768,t=3,p=1\$/);
    expect(b).not.toBe(a); // each hash has its own salt
    expect(pool.load).toEqual({ threads: 1, running: 0, waiting: 0 });
  } finally {
    pool.close();
  }
});

test("threads start on demand, up to the limit", async () => {
  const pool = new HashPool(4, 8);
  try {
    for (let i = 0; i < 3; i++) await pool.run({ op: "argon2_verify", password: "", phc: "" });
    expect(pool.load.threads).toBe(1); // one at a time: one thread is enough
    await Promise.all([pool.run(SLOW), pool.run(SLOW)]);
    expect(pool.load.threads).toBe(2);
    await Promise.all(Array.from({ length: 6 }, () => pool.run(SLOW)));
    expect(pool.load.threads).toBe(4);
  } finally {
    pool.close();
  }
});

test("argon2id and PBKDF2 results: verifiable PHC strings, wazo-auth's PBKDF2 bytes, malformed hashes never match", async () => {
  const pool = new HashPool(2, 8);
  try {
    const phc = (await pool.run({ op: "argon2_hash", password: "pw", memoryKib: 256, timeCost: 1 })) as string;
    expect(await pool.run({ op: "argon2_verify", password: "pw", phc })).toBe(true);
    expect(await pool.run({ op: "argon2_verify", password: "pW", phc })).toBe(false);
    expect(await pool.run({ op: "argon2_verify", password: "pw", phc: "$argon2id$garbage" })).toBe(false);
    // A hash written by the runtime's own implementation (the earlier releases) still verifies.
    const older = await Bun.password.hash("pw", { algorithm: "argon2id", memoryCost: 256, timeCost: 1 });
    expect(await pool.run({ op: "argon2_verify", password: "pw", phc: older })).toBe(true);
    expect(await Bun.password.verify("pw", phc)).toBe(true); // and the other way round
    const salt = crypto.getRandomValues(new Uint8Array(64));
    expect(await pool.run({ op: "pbkdf2", password: "pw", salt, iterations: 1000 })).toBe(
      pbkdf2Sync("pw", salt, 1000, 64, "sha512").toString("hex"),
    );
  } finally {
    pool.close();
  }
});

test.if(process.platform === "linux")(
  "derivation threads run at a lowered OS priority (nice 10); the event loop does not",
  async () => {
    const pool = new HashPool(2, 8);
    try {
      await Promise.all([pool.run(SLOW), pool.run(SLOW)]);
      const niceOf = (tid: string) =>
        Number(readFileSync(`/proc/self/task/${tid}/stat`, "utf8").split(") ")[1]!.split(" ")[16]);
      const threads = readdirSync("/proc/self/task").map((tid) => ({
        tid,
        name: readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim(),
        nice: niceOf(tid),
      }));
      expect(threads.filter((t) => t.name === "Worker" && t.nice === 10).length).toBeGreaterThanOrEqual(2);
      expect(niceOf(String(process.pid))).toBe(0);
    } finally {
      pool.close();
    }
  },
);

test("one pool per distinct setting; 0 threads means one per core", () => {
  const a = hashPool({ password_hash_concurrency: 0, password_hash_queue: 7 });
  expect(hashPool({ password_hash_concurrency: 0, password_hash_queue: 7 })).toBe(a);
  expect(a.threads).toBe(navigator.hardwareConcurrency);
  expect(hashPool({ password_hash_concurrency: 3, password_hash_queue: 7 }).threads).toBe(3);
});

describeEachDb(
  "logins while the password queue is full",
  (get) => {
    test("a login that cannot be checked is a 503, neither refused nor counted as a failed attempt", async () => {
      const t = get();
      await createUserRow(t.app, { username: "queued", password: "queued-pw" });
      const pool = hashPool(t.app.config);
      // Occupy the only thread and the only queue place with derivations that outlast the login's
      // own work before its derivation (SLOW, ~30 ms, did not always: the first SLOW was done and the
      // login took the freed queue place once in four runs of this file alone).
      const BUSY = { ...SLOW, memoryKib: 65_536, timeCost: 20 }; // ~0.3 s each
      const busy = [pool.run(BUSY), pool.run(BUSY)];
      const res = await t.request("POST", "/0.1/token", {
        body: {},
        headers: { Authorization: `Basic ${btoa("queued:queued-pw")}` },
      });
      expect(res.status).toBe(503);
      expect(res.json.resource).toBe("passwords");
      await Promise.all(busy);
      expect(await t.app.db.select().from(loginThrottle)).toEqual([]);
      const ok = await t.request("POST", "/0.1/token", {
        body: {},
        headers: { Authorization: `Basic ${btoa("queued:queued-pw")}` },
      });
      expect(ok.status).toBe(200);
    });
  },
  { config: { password_hash_concurrency: 1, password_hash_queue: 1 } },
);
