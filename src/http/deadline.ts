// A request never waits longer than `db_timeout` for the database: past it, the client gets a 503
// in its door's form while the work goes on in the background. postgres.js cannot cancel a query on
// a frozen server (a server-side statement_timeout is enforced by that very server), so the bound is
// kept here. For a write this means "unknown outcome": the transaction may still commit when the
// database answers again; the client must read the resource back before retrying.
//
// One clock per app, from the request's arrival: the fast paths before the router (token check,
// introspection) wait under it too, and a request they hand on to the router keeps its arrival time,
// so the route gets what is left of the budget, not a new one.
//
// One sweeper every 100 ms instead of a timer per request: a waiting request pays one promise and a
// Set entry, never a timer; a token check answered from memory (synchronously) pays nothing; the
// bound is precise to a tenth of a second.
import type { MiddlewareHandler } from "hono";
import type { AppContext } from "../boot/context.ts";
import { DatabaseUnavailableError } from "../db/failures.ts";

interface InFlight {
  startedAt: number;
  expire: (e: Error) => void;
}

const SWEEP_MS = 100;

/**
 * Requests answered 503 by the deadline while their work went on. A write that must not take
 * effect unseen (a refresh token's rotation: the client would retry with the token it rotated)
 * asks `answerAbandoned` before committing, and rolls back. A COMMIT already sent when the
 * deadline passes may still land: the refresh grant's grace period covers that (services/oidc/grants.ts).
 */
const abandoned = new WeakSet<Request>();

export const answerAbandoned = (req: Request): boolean => abandoned.has(req);

export class RequestDeadline {
  readonly ms: number;
  private readonly inFlight = new Set<InFlight>();
  /** Arrival times of requests a fast path waited on before handing them to the router. */
  private readonly arrivals = new WeakMap<Request, number>();

  constructor(private readonly seconds: number) {
    this.ms = Math.round(seconds * 1000);
  }

  /** `work`, or a DATABASE_TIMEOUT rejection once `db_timeout` has passed since `startedAt`. */
  bound<T>(work: Promise<T>, startedAt: number, req?: Request): Promise<T> {
    if (performance.now() - startedAt >= this.ms) {
      work.catch(() => {}); // its failure, later, is nobody's business now
      if (req) abandoned.add(req);
      return Promise.reject(this.timeout());
    }
    return new Promise<T>((resolve, reject) => {
      const expire = req
        ? (e: Error) => {
            abandoned.add(req);
            reject(e);
          }
        : reject;
      const entry: InFlight = { startedAt, expire };
      this.inFlight.add(entry);
      work.then(
        (v) => {
          this.inFlight.delete(entry);
          resolve(v);
        },
        (e) => {
          this.inFlight.delete(entry);
          reject(e);
        },
      );
    });
  }

  /** The router will see `req` as arrived at `startedAt` (a fast path already spent part of its time). */
  handOn(req: Request, startedAt: number): Request {
    this.arrivals.set(req, startedAt);
    return req;
  }

  /** The router's bound: from the arrival, whatever a fast path spent; nothing is started once past it. */
  middleware(): MiddlewareHandler {
    return async (c, next) => {
      const startedAt = this.arrivals.get(c.req.raw) ?? performance.now();
      if (performance.now() - startedAt >= this.ms) throw this.timeout();
      await this.bound(next(), startedAt, c.req.raw);
    };
  }

  sweep(): void {
    if (this.inFlight.size === 0) return;
    const now = performance.now();
    for (const entry of this.inFlight) {
      if (now - entry.startedAt < this.ms) continue;
      this.inFlight.delete(entry);
      entry.expire(this.timeout());
    }
  }

  private timeout(): DatabaseUnavailableError {
    return new DatabaseUnavailableError({
      code: "DATABASE_TIMEOUT",
      message: `no answer within db_timeout (${this.seconds} s)`,
    });
  }
}

const deadlines = new WeakMap<AppContext, RequestDeadline>();

/** The app's one request clock (its sweeper stops when the app closes). */
export function requestDeadline(app: AppContext): RequestDeadline {
  const known = deadlines.get(app);
  if (known) return known;
  const deadline = new RequestDeadline(app.config.db_timeout);
  const sweeper = setInterval(() => deadline.sweep(), SWEEP_MS);
  sweeper.unref?.();
  app.onClose.push(() => clearInterval(sweeper));
  deadlines.set(app, deadline);
  return deadline;
}
