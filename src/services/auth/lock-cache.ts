// Locks this instance has seen, kept in memory until they expire, so a storm of attempts on a
// locked key costs no query. It only ever holds locks (never "not locked"), so it can refuse an
// attempt the database would refuse too, and nothing else; an administrator's unlock, the one way
// a lock ends early, drops the unlocked kind of entries on every instance (login-unlock.ts).
const MAX_ENTRIES = 10_000;

export class LockCache {
  private readonly until = new Map<string, number>();

  /** Milliseconds left on the lock of `key`; 0 when none is known here. */
  msLeft(key: string): number {
    const end = this.until.get(key);
    if (end === undefined) return 0;
    const left = end - Date.now();
    if (left <= 0) {
      this.until.delete(key);
      return 0;
    }
    return left;
  }

  lock(key: string, ms: number): void {
    if (ms <= 0) return;
    if (this.until.size >= MAX_ENTRIES) this.evict();
    this.until.set(key, Date.now() + ms);
  }

  /** Forgets every lock whose key starts with `prefix`. */
  dropPrefix(prefix: string): void {
    for (const k of this.until.keys()) if (k.startsWith(prefix)) this.until.delete(k);
  }

  /** Drops expired entries, then the oldest ones, so memory stays bounded under a spray. */
  private evict(): void {
    const now = Date.now();
    for (const [k, end] of this.until) if (end <= now) this.until.delete(k);
    for (const k of this.until.keys()) {
      if (this.until.size < MAX_ENTRIES * 0.9) break;
      this.until.delete(k);
    }
  }
}
