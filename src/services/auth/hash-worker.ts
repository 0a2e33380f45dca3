// One password-derivation thread of src/services/auth/hash-pool.ts. It runs each job synchronously
// (one derivation at a time per thread) at a lowered OS priority, so the event loop — which serves
// the token check — preempts it whenever it has work: a login storm slows logins, not the hot path.
import { pbkdf2Sync } from "node:crypto";
import type { HashJob } from "./hash-pool.ts";

/** Nice value of derivation threads: 10 leaves them ~10% of a core against a busy nice-0 thread. */
const DERIVATION_NICE = 10;

interface Argon2Impl {
  hash(password: string, memoryKib: number, timeCost: number): string;
  verify(password: string, phc: string): boolean;
}

/**
 * argon2id from @node-rs/argon2 (RustCrypto's argon2, ~2.5× faster than Bun.password on x86-64),
 * or Bun.password where that package has no prebuilt binary. Both read and write the standard PHC
 * string (`$argon2id$v=19$m=…,t=…,p=1$salt$hash`), so each verifies the other's hashes, and both
 * compare the derived key in constant time.
 */
async function loadArgon2(): Promise<Argon2Impl> {
  try {
    const rs = await import("@node-rs/argon2");
    return {
      hash: (password, memoryKib, timeCost) =>
        rs.hashSync(password, { memoryCost: memoryKib, timeCost, parallelism: 1, algorithm: 2 as never }),
      verify: (password, phc) => rs.verifySync(phc, password),
    };
  } catch {
    return {
      hash: (password, memoryKib, timeCost) =>
        Bun.password.hashSync(password, { algorithm: "argon2id", memoryCost: memoryKib, timeCost }),
      verify: (password, phc) => Bun.password.verifySync(password, phc),
    };
  }
}

/** Lowers this thread's priority (Linux: nice values are per thread). Best effort elsewhere. */
async function lowerPriority(): Promise<boolean> {
  if (process.platform !== "linux") return false;
  try {
    const { dlopen, FFIType } = await import("bun:ffi");
    const libc = dlopen("libc.so.6", {
      gettid: { args: [], returns: FFIType.i32 },
      setpriority: { args: [FFIType.i32, FFIType.u32, FFIType.i32], returns: FFIType.i32 },
    });
    const PRIO_PROCESS = 0; // with a thread id: that thread only
    const ok = libc.symbols.setpriority(PRIO_PROCESS, libc.symbols.gettid(), DERIVATION_NICE) === 0;
    libc.close();
    return ok;
  } catch {
    return false; // musl, no FFI: the derivations run at normal priority
  }
}

function run(job: HashJob, argon2: Argon2Impl): string | boolean {
  switch (job.op) {
    case "argon2_hash":
      return argon2.hash(job.password, job.memoryKib, job.timeCost);
    case "argon2_verify":
      try {
        return argon2.verify(job.password, job.phc);
      } catch {
        return false; // a malformed stored hash never matches
      }
    case "pbkdf2":
      return pbkdf2Sync(job.password, job.salt, job.iterations, 64, "sha512").toString("hex");
  }
}

declare const self: Worker;
const [argon2, lowered] = await Promise.all([loadArgon2(), lowerPriority()]);
self.onmessage = (e: MessageEvent<{ id: number; job: HashJob }>) => {
  const { id, job } = e.data;
  try {
    self.postMessage({ id, value: run(job, argon2) });
  } catch (err) {
    self.postMessage({ id, error: (err as Error).message ?? String(err) });
  }
};
self.postMessage({ ready: true, lowered });
