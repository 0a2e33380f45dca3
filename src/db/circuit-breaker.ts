// Fail fast while PostgreSQL refuses connections. postgres.js waits between connection attempts
// (its back-off grows to seconds), and a statement queued meanwhile waits with it: without this,
// every request of an outage's later seconds is held for the whole `db_timeout` before its 503,
// and so are the callers and load balancers behind it.
//
// The breaker watches the statements' outcomes: one failing because the connection was refused
// opens it. While open, statements fail at once as "database unavailable" (503), and one probe at
// a time — a bare TCP connection to the server, every PROBE_MS — looks for its return; the first
// that connects closes the breaker.
import { connect } from "node:net";
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
    return new DatabaseUnavailableError({
      code: "CIRCUIT_OPEN",
      message: `PostgreSQL refuses connections (${this.lastRefusal}); probing every ${PROBE_MS} ms`,
    });
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
    const socket = connect({ host: this.host, port: this.port });
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

  /**
   * The postgres.js client as drizzle uses it (`unsafe`, `begin`): its statements refused at once
   * while open, and watched for a refused connection while closed.
   */
  guard<T extends object>(client: T): T {
    const breaker = this;
    return new Proxy(client, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if ((prop !== "unsafe" && prop !== "begin") || typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (breaker.isOpen) return refusedQuery(breaker.error());
          const pending = value.apply(target, args) as PromiseLike<unknown>;
          // Observing starts a postgres.js query a microtask later, as awaiting it does: drizzle's
          // synchronous `.values()` still applies.
          pending.then(undefined, (e: NodeJS.ErrnoException) => e?.code && REFUSED.has(e.code) && breaker.refused(e));
          return pending;
        };
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
