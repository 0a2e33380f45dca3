// Password derivations (argon2id, PBKDF2) on a small pool of dedicated threads (hash-worker.ts).
// Why not the runtime's shared thread pool: there, every login on a 2-core machine ran as many
// derivations as it liked at normal priority, and the event loop — the token check — waited for a
// core behind them (p99 284 ms during a login storm). Here:
// - at most `password_hash_concurrency` derivations run at once (default: one per core);
// - they run at a lowered OS priority, so the event loop preempts them;
// - at most `password_hash_queue` more wait; past that the request is refused at once with a 503
//   (a storm gets quick refusals, not an ever-growing backlog of requests that time out anyway).
//
// Kept by hand rather than piscina or tinypool. Both run on Bun 1.4 (checked: 200 tasks on two
// threads, and the process exits while their threads idle), and a worker could lower its own
// priority there too; but both start every thread from their own worker script in node_modules
// (piscina's dist/worker.js), which the single-file executable does not carry, while this pool's
// threads are entry points of the build (scripts/build.ts). The pool is ~150 lines, tested in
// tests/services/hash-pool.test.ts.
import { availableParallelism } from "node:os";
import { ServiceUnavailable } from "../../domain/errors.ts";
import { timePasswordHash } from "../../observe/metrics.ts";

export type HashJob =
  | { op: "argon2_hash"; password: string; memoryKib: number; timeCost: number }
  | { op: "argon2_verify"; password: string; phc: string }
  | { op: "pbkdf2"; password: string; salt: Uint8Array; iterations: number };

export interface HashPoolSizes {
  /** Derivation threads; 0 means one per core. */
  password_hash_concurrency: number;
  /** Derivations allowed to wait for a thread before new ones are refused. */
  password_hash_queue: number;
}

interface Job {
  job: HashJob;
  resolve(value: string | boolean): void;
  reject(e: Error): void;
}

/** Bun's Worker: a web Worker that can stop keeping the process alive. */
type Thread = Worker & { ref(): void; unref(): void };

interface Slot {
  worker: Thread;
  ready: boolean;
  /** The job running on this thread, and how its result is delivered. */
  running: { id: number; settle(value: string | boolean | Error): void } | null;
}

/**
 * No derivation could be made (queue full, thread lost, pool stopped): a 503, never a mismatch —
 * a login that could not be checked is neither refused nor counted as a failed attempt.
 */
export class HashingUnavailable extends ServiceUnavailable {
  constructor(message = "Too many password checks in progress; try again later") {
    super("passwords", message);
  }
}

export class HashPool {
  private readonly slots: Slot[] = [];
  private readonly waiting: Job[] = [];
  private nextId = 0;

  constructor(
    readonly threads: number,
    readonly queueLimit: number,
  ) {}

  /** Threads started, derivations running and waiting (for tests and metrics). */
  get load(): { threads: number; running: number; waiting: number } {
    return {
      threads: this.slots.length,
      running: this.slots.filter((s) => s.running).length,
      waiting: this.waiting.length,
    };
  }

  run(job: HashJob): Promise<string | boolean> {
    const idle = this.slots.find((s) => s.ready && !s.running);
    if (!idle) {
      // Threads start on demand (each holds a JavaScript heap: a quiet service on a big host keeps
      // one or two), one more for each job that would otherwise wait, up to the limit. A thread
      // still starting takes the job it finds waiting: it does not count against the queue.
      let starting = this.slots.filter((s) => !s.ready).length;
      if (this.slots.length < this.threads && starting <= this.waiting.length) {
        this.slots.push(this.spawn());
        starting++;
      }
      if (this.waiting.length >= this.queueLimit + starting) return Promise.reject(new HashingUnavailable());
    }
    return new Promise((resolve, reject) => {
      const entry = { job, resolve, reject };
      if (idle) this.dispatch(idle, entry);
      else this.waiting.push(entry);
    });
  }

  /** Stops every thread; jobs still waiting or running fail. */
  close(): void {
    for (const s of this.slots.splice(0)) {
      s.worker.terminate();
      s.running?.settle(new HashingUnavailable("Password hashing stopped"));
    }
    for (const j of this.waiting.splice(0)) j.reject(new HashingUnavailable("Password hashing stopped"));
  }

  private spawn(): Slot {
    const worker = new Worker(new URL("./hash-worker.ts", import.meta.url).href) as Thread;
    const slot: Slot = { worker, ready: false, running: null };
    worker.onmessage = (
      e: MessageEvent<{ ready?: boolean; id?: number; value?: string | boolean; error?: string }>,
    ) => {
      if (e.data.ready) {
        slot.ready = true;
        this.next(slot);
        return;
      }
      const running = slot.running;
      if (!running || running.id !== e.data.id) return;
      slot.running = null;
      running.settle(
        e.data.error === undefined ? e.data.value! : new HashingUnavailable(`Password hashing failed: ${e.data.error}`),
      );
      this.next(slot);
    };
    // A thread that dies (out of memory, a crash in native code) fails its job and is replaced at
    // the next derivation. One that could not even start fails the waiting jobs too: nothing would
    // run them (and respawning it at once would only fail again).
    worker.onerror = (e: ErrorEvent) => {
      e.preventDefault?.();
      const i = this.slots.indexOf(slot);
      if (i < 0) return;
      this.slots.splice(i, 1);
      worker.terminate();
      const failure = () => new HashingUnavailable(`Password hashing failed: ${e.message}`);
      slot.running?.settle(failure());
      if (!slot.ready && !this.slots.some((s) => s.ready)) for (const j of this.waiting.splice(0)) j.reject(failure());
    };
    return slot;
  }

  /** Gives an idle thread the oldest waiting job; an idle pool does not keep the process alive. */
  private next(slot: Slot): void {
    const job = this.waiting.shift();
    if (job) this.dispatch(slot, job);
    else slot.worker.unref();
  }

  private dispatch(slot: Slot, { job, resolve, reject }: Job): void {
    const id = this.nextId++;
    slot.worker.ref();
    // The metric times the derivation itself (sent to a thread → answer), not the wait in the queue.
    const algorithm = job.op === "pbkdf2" ? "pbkdf2_sha512" : "argon2id";
    timePasswordHash(
      algorithm,
      () =>
        new Promise<string | boolean>((done, fail) => {
          slot.running = { id, settle: (v) => (v instanceof Error ? fail(v) : done(v)) };
          slot.worker.postMessage({ id, job });
        }),
    ).then(resolve, reject);
  }
}

const pools = new Map<string, HashPool>();

/** The process's pool for these sizes (one per distinct setting, created at first use). */
export function hashPool(sizes: HashPoolSizes): HashPool {
  const threads = sizes.password_hash_concurrency || availableParallelism();
  const key = `${threads}:${sizes.password_hash_queue}`;
  let pool = pools.get(key);
  if (!pool) pools.set(key, (pool = new HashPool(threads, sizes.password_hash_queue)));
  return pool;
}
