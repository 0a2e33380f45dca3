// `meta.version` (RFC 7644 §3.14): a weak entity tag derived from the resource's content, so it
// changes with any change through any door (SCIM, the REST API, the console), with no counter to
// keep in step. `If-Match` compares it; a mismatch is 412.
import { createHash } from "node:crypto";
import { preconditionFailed } from "./errors.ts";

type Json = Record<string, unknown>;

/** Sets `meta.version` on `resource` (its JSON without the version) and returns the tag. */
export function stampVersion(resource: Json): string {
  const meta = (resource.meta ?? {}) as Json;
  delete meta.version;
  const tag = `W/"${createHash("sha256").update(JSON.stringify(resource)).digest("base64url").slice(0, 22)}"`;
  resource.meta = { ...meta, version: tag };
  return tag;
}

/** 412 unless `ifMatch` (an If-Match header: `*` or a list of tags) names `current`. */
export function requireMatch(ifMatch: string | undefined, current: string): void {
  if (ifMatch === undefined || ifMatch.trim() === "" || ifMatch.trim() === "*") return;
  // Weak comparison (RFC 9110 §8.8.3.2): the opaque parts are compared, W/ prefixes ignored.
  const opaque = (t: string) => t.trim().replace(/^W\//i, "");
  const wanted = opaque(current);
  if (!ifMatch.split(",").some((t) => opaque(t) === wanted)) throw preconditionFailed();
}
