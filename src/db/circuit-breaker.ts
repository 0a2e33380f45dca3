// Fail fast while PostgreSQL refuses connections. postgres.js waits between connection attempts
// (its back-off grows to seconds), and a statement queued meanwhile waits with it: without this,
// every request of an outage's later seconds is held for the whole `db_timeout` before its 503,
// and so are the callers and load balancers behind it.
//
// The breaker watches the pool's connection attempts (the socket factory below): a refused one
// opens it. While open, statements fail at once as "database unavailable" (503), and one probe at
// a time — a bare TCP connection to the server, every PROBE_MS — looks for its return; the first
// that connects, or any connection of the pool that does, closes the breaker.
import { connect, type Socket } from "node:net";
import { DatabaseUnavailableError } from "./failures.ts";

/** Socket errors that mean "nobody listens there now" (not a slow or frozen server). */
const REFUSED = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);
const PROBE_MS = 250;

export class ConnectBreaker {
  private lastRefusal: string | null = null;
  private probe: ReturnType<typeof setInterval> | null = null;
  private probing = false;

  /** `host:port` of the server, probed while open; `timeoutMs` bounds a probe (db_timeout). */
  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly timeoutMs: number,
  ) {}

  get isOpen(): boolean {
    return this.lastRefusal !== null;
  }

  /** The error of a statement refused while open, naming the last refusal (logged as the cause). */
  error(): DatabaseUnavailableError {
    return new DatabaseUnavailableError({ code: "CIRCUIT_OPEN", message: `PostgreSQL refuses connections (${this.lastRefusal}); probing every ${PROBE_MS} ms` });
  }

  refused(e: NodeJS.ErrnoException): void {
    this.lastRefusal = `${e.code}: ${e.message}`;
    if (this.probe) return;
    this.probe = setInterval(() => this.tryProbe(), PROBE_MS);
    this.probe.unref?.();
  }

  connected(): void {
    this.lastRefusal = null;
    if (this.probe) clearInterval(this.probe);
    this.probe = null;
  }

  stop(): void {
    this.connected();
  }

  private tryProbe(): void {
    if (this.probing) return;
    this.probing = true;
    const socket = this.open();
    const done = () => {
      this.probing = false;
      socket.destroy();
    };
    socket.setTimeout(this.timeoutMs, done);
    socket.once("connect", () => {
      done();
      this.connected();
    });
    socket.once("error", (e: NodeJS.ErrnoException) => {
      done();
      if (e.code && REFUSED.has(e.code)) this.lastRefusal = `${e.code}: ${e.message}`;
    });
  }

  private open(): Socket {
    return connect({ host: this.host, port: this.port });
  }

  /**
   * postgres.js's `socket` option: the TCP connection, being opened (what is written meanwhile is
   * sent once connected), telling the breaker how the attempt went. A failure reaches postgres.js
   * as the socket's error and close, so it retries with its back-off as with its own sockets.
   */
  socketFactory(): () => Socket {
    return () => {
      const socket = this.open();
      socket.once("connect", () => this.connected());
      socket.once("error", (e: NodeJS.ErrnoException) => e.code && REFUSED.has(e.code) && this.refused(e));
      return socket;
    };
  }

  /** The postgres.js client as drizzle uses it (`unsafe`, `begin`), its statements refused at once while open. */
  guard<T extends object>(client: T): T {
    const breaker = this;
    return new Proxy(client, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if ((prop !== "unsafe" && prop !== "begin") || typeof value !== "function") return value;
        return (...args: unknown[]) => (breaker.isOpen ? refusedQuery(breaker.error()) : value.apply(target, args));
      },
    });
  }
}

/** A failed statement in the shapes drizzle consumes (awaited, or `.values()`), never unhandled. */
function refusedQuery(e: Error): Promise<never> & { values(): Promise<never> } {
  const failed = Promise.reject(e);
  failed.catch(() => {});
  return Object.assign(failed, { values: () => failed });
}
