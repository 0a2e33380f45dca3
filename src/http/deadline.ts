// A request never waits longer than `db_timeout` for the database: past it, the client gets a 503
// JSON error while the work goes on in the background. postgres.js cannot cancel a query on a
// frozen server (a server-side statement_timeout is enforced by that very server), so the bound is
// kept here. For a write this means "unknown outcome": the transaction may still commit when the
// database answers again; the client must read the resource back before retrying.
//
// One sweeper every 100 ms instead of a timer per request: the token check's hot path pays one
// promise and a Set entry, and the bound is precise to a tenth of a second.
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

export function requestDeadline(app: AppContext): MiddlewareHandler {
  const ms = Math.round(app.config.db_timeout * 1000);
  const inFlight = new Set<InFlight>();
  const sweeper = setInterval(() => {
    if (inFlight.size === 0) return;
    const now = performance.now();
    for (const entry of inFlight) {
      if (now - entry.startedAt < ms) continue;
      inFlight.delete(entry);
      entry.expire(
        new DatabaseUnavailableError({
          code: "DATABASE_TIMEOUT",
          message: `no answer within db_timeout (${app.config.db_timeout} s)`,
        }),
      );
    }
  }, SWEEP_MS);
  sweeper.unref?.();
  app.onClose.push(() => clearInterval(sweeper));
  return async (c, next) => {
    const entry: InFlight = { startedAt: performance.now(), expire: () => {} };
    inFlight.add(entry);
    try {
      await new Promise<void>((resolve, reject) => {
        entry.expire = (e) => {
          abandoned.add(c.req.raw);
          reject(e);
        };
        next().then(resolve, reject);
      });
    } finally {
      inFlight.delete(entry);
    }
  };
}
