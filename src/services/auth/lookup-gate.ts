// Bounds the database lookups of tokens missing from the cache, so that a flood of unknown tokens
// cannot make valid (cached) checks wait. On PGlite the database runs on the event loop's thread:
// queries queued back to back would run one after the other without ever letting the loop read a
// socket, so each lookup first yields a full turn of the loop (setImmediate) and only one runs at a
// time. On PostgreSQL, lookups take at most half the pool, so logins and administration always find
// a connection. Waiters beyond `maxQueue` are refused with a 503 (never a 404: the token may exist).
import { ServiceUnavailable } from "../../http/errors.ts";

export class LookupGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly concurrency: number,
    private readonly yieldFirst: boolean,
    private readonly maxQueue = 10_000,
  ) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.maxQueue) throw new ServiceUnavailable("tokens", "Too many token lookups in progress; retry later");
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      if (this.yieldFirst) await new Promise((resolve) => setImmediate(resolve));
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next(); // the slot passes to the next waiter
      else this.running--;
    }
  }
}
