// The access log: one line per request (method, path with tokens masked, status, duration, client
// address). With `access_log: false` (the default) only the requests worth a look are written:
// answers of 400 and above and requests slower than SLOW_REQUEST_MS. A request that is not
// written costs two clock reads: nothing is formatted and the peer address is not looked up.
import type { MiddlewareHandler } from "hono";
import { requestOrigin } from "./request-origin.ts";
import type { AppContext } from "../boot/context.ts";
import { maskPath } from "../observe/log.ts";

export const SLOW_REQUEST_MS = 1000;

/** True when a request with this outcome gets an access-log line. */
export function accessLogged(app: AppContext, status: number, durationMs: number): boolean {
  return (app.config.access_log || status >= 400 || durationMs >= SLOW_REQUEST_MS) && app.log.enabled("info");
}

/**
 * Writes the access-log line (fields formatted by hand: this runs for every token check when
 * enabled). `maskedPath` is the path as logged, already JSON-quoted, with any token masked.
 */
export function writeAccessLine(
  app: AppContext,
  method: string,
  maskedPath: string,
  status: number,
  durationMs: number,
  remoteAddr: string,
): void {
  const fields = `"method":"${method}","path":${maskedPath},"status":${status},"duration_ms":${Math.round(durationMs * 100) / 100},"remote_addr":${JSON.stringify(remoteAddr)}`;
  app.log.raw("info", "request", fields);
}

export function requestLog(app: AppContext): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    await next();
    const duration = performance.now() - started;
    if (!accessLogged(app, c.res.status, duration)) return;
    writeAccessLine(
      app,
      c.req.method,
      JSON.stringify(maskPath(c.req.path)),
      c.res.status,
      duration,
      requestOrigin(c, app.config.rest_api.trusted_proxies).address,
    );
  };
}
