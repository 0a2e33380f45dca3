// One log line per request: method, path (tokens masked), status, duration and remote address.
import type { Context, MiddlewareHandler } from "hono";
import type { AppContext } from "../context.ts";
import { maskPath } from "../log.ts";

/** The client address: the socket peer, or the `X-Forwarded-For` entry `num_proxies` hops back. */
export function remoteAddress(c: Context, numProxies: number): string {
  const peer = (c.env as { remoteAddr?: string } | undefined)?.remoteAddr ?? "";
  if (numProxies <= 0) return peer;
  const forwarded = c.req.header("X-Forwarded-For");
  if (!forwarded) return peer;
  const hops = forwarded.split(",").map((s) => s.trim()).filter(Boolean);
  return hops.length >= numProxies ? hops[hops.length - numProxies]! : peer;
}

export function requestLog(app: AppContext): MiddlewareHandler {
  return async (c, next) => {
    if (!app.log.enabled("info")) return next();
    const started = performance.now();
    await next();
    app.log.info("request", {
      method: c.req.method,
      path: maskPath(c.req.path),
      status: c.res.status,
      duration_ms: Math.round((performance.now() - started) * 100) / 100,
      remote_addr: remoteAddress(c, app.config.rest_api.num_proxies),
    });
  };
}
