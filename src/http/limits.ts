// Size limits of a request, answered with the one error body (D1 of docs/wazo-auth-differences.md) rather than the runtime's bare
// status. The runtime's own limits sit above these (docs/security.md "Security"): Bun refuses a request head
// over `--max-http-header-size` (16 KiB by default; `npm start` raises it to 64 KiB so that ours
// answers first) and a body over `maxRequestBodySize` before any handler runs.
import type { MiddlewareHandler } from "hono";
import { ApiError } from "../domain/errors.ts";
import { jsonError, resourceOfPath } from "./error-response.ts";

/** Request headers, names and values together (a large cookie or token header is the usual cause). */
export const MAX_HEADER_BYTES = 16 * 1024;
/** A JSON body; nothing Tessera accepts comes near it. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** What `npm start` gives `bun --max-http-header-size`, and `maxRequestBodySize` of Bun.serve. */
export const RUNTIME_HEADER_BYTES = 64 * 1024;
export const RUNTIME_BODY_BYTES = 8 * 1024 * 1024;

export function requestLimits(): MiddlewareHandler {
  return async (c, next) => {
    // forEach, not the iterator: half the cost on the token-check hot path (about a microsecond).
    let size = 0;
    c.req.raw.headers.forEach((value, name) => {
      size += name.length + value.length + 4;
    });
    if (size > MAX_HEADER_BYTES) {
      return jsonError(
        c,
        new ApiError(
          431,
          "headers-too-large",
          `The request headers exceed ${MAX_HEADER_BYTES} bytes.`,
          resourceOfPath(c.req.path),
          { max_bytes: MAX_HEADER_BYTES },
        ),
      );
    }
    const length = Number(c.req.header("Content-Length") ?? 0);
    if (length > MAX_BODY_BYTES) return jsonError(c, tooLarge(c.req.path));
    await next();
  };
}

/** 413 for a body over `MAX_BODY_BYTES` (also raised by `readJson` for bodies sent without a length). */
export function tooLarge(path: string): ApiError {
  return new ApiError(
    413,
    "payload-too-large",
    `The request body exceeds ${MAX_BODY_BYTES} bytes.`,
    resourceOfPath(path),
    { max_bytes: MAX_BODY_BYTES },
  );
}
