// Looks up the tokens missing from the cache, many per query, so that a flood of unknown tokens
// cannot make valid (cached) checks wait. The ids asked for during one turn of the event loop are
// read together in the next one (`uuid = any(…)`): 64 connections of made-up tokens cost one query
// per turn instead of 64, on the database and in this process. At most `concurrency` reads run at
// once — on PGlite one, since it has a single connection that logins and administration share; on
// PostgreSQL at most half the pool, so logins and administration always find a connection. Ids
// beyond `maxPending` are refused with a 503 (never a 404: the token may exist).
import { ServiceUnavailable } from "../../domain/errors.ts";

interface Waiter<Row> {
  resolve: (row: Row | undefined) => void;
  reject: (e: unknown) => void;
}

export class LookupGate<Row extends { uuid: string }> {
  private pending = new Map<string, Array<Waiter<Row>>>();
  private running = 0;
  private scheduled = false;

  constructor(
    private readonly read: (uuids: string[]) => Promise<Row[]>,
    private readonly concurrency: number,
    private readonly maxPending = 10_000,
    private readonly batchSize = 500,
  ) {}

  /** The row with this id, or undefined; read with the other ids asked for in this turn. */
  lookup(uuid: string): Promise<Row | undefined> {
    let waiters = this.pending.get(uuid);
    if (!waiters) {
      if (this.pending.size >= this.maxPending)
        return Promise.reject(new ServiceUnavailable("tokens", "Too many token lookups in progress; retry later"));
      this.pending.set(uuid, (waiters = []));
    }
    const answer = new Promise<Row | undefined>((resolve, reject) => waiters.push({ resolve, reject }));
    this.schedule();
    return answer;
  }

  /** A read at the next turn of the loop, when a slot is free: the ids of this turn join it. */
  private schedule(): void {
    if (this.scheduled || this.running >= this.concurrency || this.pending.size === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.readBatch();
    });
  }

  private readBatch(): void {
    if (this.running >= this.concurrency || this.pending.size === 0) return;
    const batch = new Map<string, Array<Waiter<Row>>>();
    for (const [uuid, waiters] of this.pending) {
      if (batch.size >= this.batchSize) break;
      batch.set(uuid, waiters);
    }
    for (const uuid of batch.keys()) this.pending.delete(uuid);
    this.running++;
    this.read([...batch.keys()])
      .then(
        (rows) => {
          const byId = new Map(rows.map((r) => [r.uuid, r]));
          for (const [uuid, waiters] of batch) for (const w of waiters) w.resolve(byId.get(uuid));
        },
        (e) => {
          for (const waiters of batch.values()) for (const w of waiters) w.reject(e);
        },
      )
      .finally(() => {
        this.running--;
        this.schedule();
      });
    this.schedule(); // another slot may take the rest at the next turn
  }
}
