// The embedded database (PGlite) on a thread of its own (pglite-thread.ts), seen from the main
// thread as the part of PGlite's interface that drizzle and Tessera use: query, transaction,
// listen, close.
//
// Why a thread: PGlite is a WebAssembly PostgreSQL with a heap of several hundred megabytes. In the
// main thread, every garbage collection of the request path's short-lived objects also walked that
// heap (a bare Bun.serve answering 204 went from a p99 of 1.1 ms to 3.9 ms merely by having an idle
// PGlite open beside it), and every statement ran on the event loop, so the token check waited
// behind logins and list pages. On its own thread, PGlite's garbage and its work stay there; a
// statement costs one message each way (~50 µs).
import {
  compileEngine,
  deserializeError,
  type CarriedModules,
  type SerializedError,
  type ThreadReply,
  type ThreadRequest,
} from "./pglite-protocol.ts";

let processEngine: Promise<WebAssembly.Module> | null = null;

/**
 * PGlite's WebAssembly, compiled once per process (~130 ms on a 2-core machine) and handed to each
 * thread started with `compile` (openDatabase: the throw-away ones). The compiled code is shared with
 * every instance made from it, so a process with several embedded databases (a test process)
 * compiles and optimizes the engine once, not once per database. On a failure here, PGlite compiles
 * it itself at `open`, as it does in a thread started without `compile`.
 */
export function compiledEngine(): Promise<WebAssembly.Module> {
  if (!processEngine) {
    // Every failure, the file's lookup included, is a rejection (never a throw out of `start`).
    processEngine = Promise.resolve().then(compileEngine);
    processEngine.catch(() => {}); // a thread abandoned before its `open` never awaits it
  }
  return processEngine;
}

/** Bun's Worker: a web Worker that can stop keeping the process alive. */
type Thread = Worker & { ref(): void; unref(): void };

/**
 * Threads whose throw-away (`memory://`) database was closed cleanly, kept (unreferenced: they never
 * hold the process open) for the next throw-away database this process opens. A new thread is a new
 * JavaScript engine: PGlite's own code (the data directory's loading, the protocol) starts cold in it
 * and is compiled again; a kept one opens its next database warm. Measured on a 2-core machine, a
 * database from the tests' migrated template: 0.62 s of CPU in a new thread, ~0.32 s in a kept one.
 * A test process opens many such databases; a service opens one data directory in its life.
 * Data directories never use kept threads: a kept thread opening the same directory a second time
 * hung in PGlite's start-up (seen in the export test, not understood), so that path is left as it was.
 */
const keptThreads: { thread: Thread; taken: AbortController }[] = [];
const KEPT_THREADS = 2;

function keepThread(thread: Thread): void {
  const taken = new AbortController();
  const entry = { thread, taken };
  // A kept thread that stops (it should not) is forgotten, never handed to an `open` that would wait forever.
  const forget = () => {
    const at = keptThreads.indexOf(entry);
    if (at >= 0) keptThreads.splice(at, 1);
  };
  thread.addEventListener("close", forget, { signal: taken.signal });
  keptThreads.push(entry);
}

/** A `memory://` database: thrown away when closed. */
export const isThrowAway = (dataDir: string): boolean => dataDir.startsWith("memory://");

function takeKeptThread(): Thread | undefined {
  const entry = keptThreads.pop();
  entry?.taken.abort();
  return entry?.thread;
}

/** Distributes the union over each request kind, then drops its id (assigned when sent). */
type Unsent<T> = T extends unknown ? Omit<T, "id"> : never;

interface Pending {
  resolve(value: unknown): void;
  reject(e: Error): void;
}

export interface QueryResult<T = Record<string, unknown>> {
  rows: T[];
  affectedRows?: number;
  fields: { name: string; dataTypeID: number }[];
}

interface QueryOptions {
  rowMode?: "array" | "object";
  /** Only parsers that keep a type's text (drizzle's kind) can cross the thread boundary. */
  parsers?: Record<number, unknown>;
}

/** What a query needs of its options on the other thread. */
function sentOptions(options?: QueryOptions): { rowMode?: "array" | "object"; keepText?: number[] } {
  if (!options) return {};
  return {
    rowMode: options.rowMode,
    ...(options.parsers ? { keepText: Object.keys(options.parsers).map(Number) } : {}),
  };
}

export interface PgliteTransaction {
  query<T = Record<string, unknown>>(text: string, params?: unknown[], options?: QueryOptions): Promise<QueryResult<T>>;
  readonly closed: boolean;
}

/** The thread `startEarly` started, until a data directory's `start` takes it. */
let early: PgliteThreadClient | null = null;

export class PgliteThreadClient {
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Map<string, Set<(payload: string) => void>>();
  private readonly lostListeners: Array<(reason: string) => void> = [];
  private nextId = 1;
  /** Why the thread can no longer answer (closed, or died), once it cannot. */
  private gone: string | null = null;

  /** Removes this client's close listener when the thread goes back to `keptThreads`. */
  private readonly released = new AbortController();

  private constructor(
    private readonly thread: Thread,
    /** Opens a `memory://` database: the thread may be kept when it closes (see `keptThreads`). */
    private readonly throwAway: boolean,
  ) {
    thread.unref(); // kept alive only while a request waits (send/settle)
    thread.onmessage = (event: MessageEvent<ThreadReply>) => this.receive(event.data);
    // A thread that dies (out of memory, an abort of the engine) fails everything waiting, and every
    // later request: "PGlite is closed" is classified as the database being unavailable (503).
    thread.onerror = (event) =>
      this.lost(`PGlite is closed: its thread stopped (${(event as ErrorEvent).message ?? "error"})`);
    thread.addEventListener("close", () => this.lost("PGlite is closed: its thread stopped"), {
      signal: this.released.signal,
    });
  }

  /** Called once if the thread stops without being closed: nothing can be served any more. */
  onLost(fn: (reason: string) => void): void {
    this.lostListeners.push(fn);
  }

  /** Starts the thread and opens `dataDir` there (`memory://` for a throw-away database). */
  static async open(
    dataDir: string,
    options: { template?: Blob; modules?: CarriedModules } = {},
  ): Promise<PgliteThreadClient> {
    return PgliteThreadClient.start({ compile: !options.modules, throwAway: isThrowAway(dataDir) }).open(
      dataDir,
      options,
    );
  }

  /**
   * Starts the thread at once (synchronously) and, with `compile`, PGlite's engine compiling, so
   * that both run while the caller still prepares what `open` needs and loads the rest of the
   * service. A single-file build passes its own compiled engine to `open` instead.
   */
  static start({ compile, throwAway }: { compile: boolean; throwAway: boolean }): PgliteThreadClient {
    if (!throwAway && early) {
      const started = early;
      early = null;
      return started;
    }
    const kept = throwAway ? takeKeptThread() : undefined;
    const client = new PgliteThreadClient(
      kept ?? (new Worker(new URL("./pglite-thread.ts", import.meta.url).href) as Thread),
      throwAway,
    );
    if (compile) client.compiling = compiledEngine();
    return client;
  }

  /**
   * Starts the data directory's thread, compiling the engine, before the process has read its
   * configuration (pglite-early.ts): the next `start` for a data directory takes it. On a 2-core
   * machine its ~30 ms start and ~130 ms compile then run beside the ~60 ms the main thread spends
   * loading and reading the configuration, instead of after it.
   */
  static startEarly(): void {
    if (early) return;
    early = new PgliteThreadClient(new Worker(new URL("./pglite-thread.ts", import.meta.url).href) as Thread, false);
    early.send({ op: "prepare" }).catch(() => {});
  }

  /** Stops the early thread, if one was started and not taken (the configuration names PostgreSQL). */
  static abandonEarly(): void {
    early?.abandon();
    early = null;
  }

  /** The engine being compiled for this thread's `open` (none: PGlite's own, or the carried one). */
  private compiling: Promise<WebAssembly.Module> | null = null;

  /** Opens `dataDir` on the started thread; stops the thread if that fails. */
  async open(dataDir: string, options: { template?: Blob; modules?: CarriedModules } = {}): Promise<this> {
    try {
      const engine = options.modules ? undefined : await this.compiling?.catch(() => undefined);
      await this.send({ op: "open", dataDir, ...options, ...(engine ? { engine } : {}) });
    } catch (e) {
      this.thread.terminate();
      throw e;
    }
    return this;
  }

  /** The data directory as a gzip'd tar, taken between two statements (pglite-thread.ts, `dump`). */
  dump(): Promise<Uint8Array<ArrayBuffer>> {
    return this.send({ op: "dump" }) as Promise<Uint8Array<ArrayBuffer>>;
  }

  /** Stops a started thread that will not be opened. */
  abandon(): void {
    this.thread.terminate();
  }

  query<T = Record<string, unknown>>(
    text: string,
    params?: unknown[],
    options?: QueryOptions,
  ): Promise<QueryResult<T>> {
    return this.send({ op: "query", text, params, ...sentOptions(options) }) as Promise<QueryResult<T>>;
  }

  /**
   * Runs `work` in a transaction: committed when it resolves, rolled back when it throws. As in
   * PGlite itself, other queries wait until it ends (one connection).
   */
  async transaction<T>(work: (tx: PgliteTransaction) => Promise<T>): Promise<T> {
    const id = this.nextId; // the transaction is known by its begin request's id
    await this.send({ op: "begin" });
    let closed = false;
    const tx: PgliteTransaction = {
      query: <R>(text: string, params?: unknown[], options?: QueryOptions) =>
        closed
          ? Promise.reject(new Error("the transaction has ended"))
          : (this.send({ op: "query", text, params, tx: id, ...sentOptions(options) }) as Promise<QueryResult<R>>),
      get closed() {
        return closed;
      },
    };
    let result: T;
    try {
      result = await work(tx);
    } catch (e) {
      closed = true;
      await this.send({ op: "end", tx: id, commit: false }).catch(() => {});
      throw e;
    }
    closed = true;
    await this.send({ op: "end", tx: id, commit: true });
    return result;
  }

  /** Subscribes to a NOTIFY channel; returns the unsubscribe function. */
  async listen(channel: string, onMessage: (payload: string) => void): Promise<() => Promise<void>> {
    let subscribers = this.listeners.get(channel);
    if (!subscribers) {
      this.listeners.set(channel, (subscribers = new Set()));
      await this.send({ op: "listen", channel });
    }
    subscribers.add(onMessage);
    return async () => {
      subscribers.delete(onMessage);
      if (subscribers.size > 0 || this.listeners.get(channel) !== subscribers) return;
      this.listeners.delete(channel);
      await this.send({ op: "unlisten", channel }).catch(() => {});
    };
  }

  /**
   * The watchdog: a heartbeat statement (`select 1`) every third of `deadlineMs` (at most 5 s); one
   * left unanswered past `deadlineMs` means the thread stopped answering (a hung engine, a blocked
   * thread: no exit event comes then). It is treated as a lost thread — everything waiting fails,
   * onLost is told (the server exits so that it is restarted) — and the thread is terminated.
   */
  watch(deadlineMs: number): void {
    let sentAt: number | null = null;
    const timer = setInterval(
      () => {
        if (this.gone) return clearInterval(timer);
        if (sentAt === null) {
          sentAt = performance.now();
          this.query("select 1").then(
            () => (sentAt = null),
            () => {},
          );
        } else if (performance.now() - sentAt > deadlineMs) {
          clearInterval(timer);
          this.lost(
            `PGlite is closed: its thread stopped answering (no heartbeat answer within ${deadlineMs / 1000} s)`,
          );
          this.thread.terminate();
        }
      },
      Math.max(50, Math.min(5000, Math.round(deadlineMs / 3))),
    );
    timer.unref?.();
  }

  async close(): Promise<void> {
    if (this.gone) return;
    let closedCleanly = false;
    try {
      await this.send({ op: "close" });
      closedCleanly = true;
    } finally {
      this.fail("PGlite is closed");
      // Only a thread that answered its close is known to be healthy enough to open another database.
      if (closedCleanly && this.throwAway && keptThreads.length < KEPT_THREADS) {
        this.released.abort();
        this.thread.onmessage = null;
        this.thread.onerror = null;
        keepThread(this.thread);
      } else this.thread.terminate();
    }
  }

  private send(request: Unsent<ThreadRequest>): Promise<unknown> {
    if (this.gone) return Promise.reject(new Error(this.gone));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) this.thread.ref();
      this.pending.set(id, { resolve, reject });
      try {
        this.thread.postMessage({ ...request, id } as ThreadRequest);
      } catch (e) {
        this.settled(id); // a parameter that cannot be copied to the thread (DataCloneError)
        reject(e);
      }
    });
  }

  private receive(reply: ThreadReply): void {
    if ("notify" in reply) {
      for (const fn of this.listeners.get(reply.notify) ?? []) fn(reply.payload);
      return;
    }
    const waiting = this.pending.get(reply.id);
    if (!waiting) return;
    this.settled(reply.id);
    if (reply.error) waiting.reject(deserializeError(reply.error as SerializedError));
    else waiting.resolve(reply.value);
  }

  private settled(id: number): void {
    this.pending.delete(id);
    if (this.pending.size === 0) this.thread.unref();
  }

  private lost(reason: string): void {
    if (this.gone) return; // closed on purpose
    this.fail(reason);
    for (const fn of this.lostListeners) fn(reason);
  }

  private fail(reason: string): void {
    this.gone ??= reason;
    for (const [id, waiting] of [...this.pending]) {
      this.settled(id);
      waiting.reject(new Error(reason));
    }
  }
}
