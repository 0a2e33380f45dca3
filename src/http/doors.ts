// The four doors a request comes through, each answering errors in its own form whatever failed
// (a refusal, an outage, the db_timeout deadline): the REST API the wazo-auth JSON body, the OAuth
// protocol endpoints RFC 6749 §5.2's `{error, error_description}`, the browser pages an HTML error
// page, the SCIM service provider RFC 7644 §3.12's error body. A route group names its door (a
// route may name another); the error exit asks the route table which door a request came through,
// so an error raised before the route ran is shaped too.
import type { Door, RouteSpec } from "./route.ts";

/** Where the SCIM service provider's routes live: a request under it that no route matches (404, 405) is SCIM's too. */
const SCIM_BASE = "/0.1/scim/v2/";

/**
 * The door of a request: the first declared route matching its method and path; with none, the SCIM
 * service provider's under its base (its clients read RFC 7644's error body whatever failed), else
 * the REST API's.
 */
export function doorLookup(specs: readonly RouteSpec[]): (method: string, path: string) => Door {
  let compiled: Array<{ method: string; path: RegExp; door: Door }> | null = null;
  return (method, path) => {
    compiled ??= specs.map((s) => ({
      method: s.method === "head" ? "get" : s.method,
      path: new RegExp(`^/0\\.1${s.path.replace(/[.]/g, "\\.").replace(/\{\w+\}/g, "[^/]+")}/?$`),
      door: s.door ?? "api",
    }));
    const m = method === "HEAD" ? "get" : method.toLowerCase();
    return (
      compiled.find((r) => r.method === m && r.path.test(path))?.door ?? (path.startsWith(SCIM_BASE) ? "scim" : "api")
    );
  };
}
