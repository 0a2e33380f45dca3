// GET /0.1/console/…: the administration console's page and files (docs/console.md). Static files
// only: the page signs in through the OpenID Connect login page and then calls the public REST API
// with the user's token, so it can do nothing the API would refuse. Not part of the OpenAPI
// document (not an API), like the login page's HTML.
import { Hono } from "hono";
import { CONSOLE_FILES, consoleAssets, type ConsoleFile } from "../boot/console-assets.ts";
import type { Env } from "../http/route.ts";

/**
 * Strict CSP (CSP Level 3): scripts and styles from this origin only, no inline script, no eval,
 * no CDN; the page talks only to this origin; it cannot be framed (clickjacking) or send forms away.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

const HEADERS = {
  "Content-Security-Policy": CONSOLE_CSP,
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  // The callback URL carries the authorization code: never send it on.
  "Referrer-Policy": "no-referrer",
};

/**
 * `no-cache` with a strong ETag: the browser asks each time (a new version is seen at once) and gets
 * a 304 without a body when nothing changed (RFC 9111 §5.2.2.4, RFC 9110 §13.1.2); gzip when the
 * browser accepts it (RFC 9110 §12.5.3), a quarter of the bytes.
 */
async function file(name: ConsoleFile, req: Request): Promise<Response> {
  const f = (await consoleAssets())[name];
  const headers: Record<string, string> = {
    ...HEADERS,
    "Content-Type": CONSOLE_FILES[name],
    "Cache-Control": "no-cache",
    ETag: f.etag,
    Vary: "Accept-Encoding",
  };
  const match = req.headers.get("if-none-match");
  if (match && match.split(",").some((tag) => tag.trim().replace(/^W\//, "") === f.etag))
    return new Response(null, { status: 304, headers });
  if (/\bgzip\b/.test(req.headers.get("accept-encoding") ?? ""))
    return new Response(f.gzip, { headers: { ...headers, "Content-Encoding": "gzip" } });
  return new Response(f.text, { headers });
}

const PAGES: Record<string, ConsoleFile> = {
  "/": "index.html",
  "/callback": "index.html",
  "/app.js": "app.js",
  "/app.css": "app.css",
};

/** Mounted at `/0.1/console`: the page (also at `/callback`, the OIDC redirect URI) and its two files. */
export function consoleRoutes(): Hono<Env> {
  const hono = new Hono<Env>();
  hono.get("*", async (c) => {
    // The raw path: the router's non-strict matching drops a trailing slash from `c.req.path`.
    const path = new URL(c.req.url).pathname;
    const rest = path.slice(path.indexOf("/0.1/console") + "/0.1/console".length);
    // Relative URLs inside the page need the trailing slash (and keep working behind X-Script-Name).
    if (rest === "") return c.redirect("console/", 301);
    const name = PAGES[rest];
    return name ? file(name, c.req.raw) : c.notFound();
  });
  return hono;
}
