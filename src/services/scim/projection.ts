// `attributes` and `excludedAttributes` (RFC 7644 §3.4.2.5, §3.9): the attributes a response
// returns. `id` and `schemas` are always returned; `meta` unless excluded (RFC 7643 §3.1).
import { parseAttrPath, type AttrPath } from "./filter-parse.ts";
import { baseOf, keyOf } from "./filter-match.ts";
import { invalidValue } from "./errors.ts";

type Json = Record<string, unknown>;

const ALWAYS = new Set(["id", "schemas"]);

/** A comma-separated list of attribute paths (400 invalidValue when one is malformed). */
export function attributeList(value: string | undefined): AttrPath[] | null {
  if (value === undefined || value.trim() === "") return null;
  return value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => parseAttrPath(s, invalidValue));
}

const isCore = (schema: string | null) => schema === null || /:core:2\.0:(User|Group)$/i.test(schema);

function copyPath(from: Json, to: Json, p: AttrPath): void {
  let src: Json | undefined = from;
  let dst: Json = to;
  if (!isCore(p.schema)) {
    src = baseOf(from, p.schema);
    const ek = keyOf(from, p.schema!);
    if (!src || ek === undefined) return;
    dst = (to[ek] ??= {}) as Json;
  }
  const k = keyOf(src, p.attr);
  if (k === undefined) return;
  const v = src[k];
  if (p.sub === null) {
    dst[k] = v;
    return;
  }
  const pick = (item: unknown) => {
    if (!item || typeof item !== "object") return undefined;
    const sk = keyOf(item as Json, p.sub!);
    return sk === undefined ? {} : { [sk]: (item as Json)[sk] };
  };
  if (Array.isArray(v)) {
    const prev = Array.isArray(dst[k]) ? (dst[k] as Json[]) : [];
    dst[k] = v.map((item, i) => ({ ...(prev[i] ?? {}), ...pick(item) }));
  } else if (v && typeof v === "object") dst[k] = { ...((dst[k] as Json) ?? {}), ...pick(v) };
}

function removePath(target: Json, p: AttrPath): void {
  const base = isCore(p.schema) ? target : baseOf(target, p.schema);
  if (!base) return;
  const k = keyOf(base, p.attr);
  if (k === undefined || (base === target && ALWAYS.has(k))) return;
  if (p.sub === null) {
    delete base[k];
    return;
  }
  const v = base[k];
  for (const item of Array.isArray(v) ? v : [v]) {
    if (!item || typeof item !== "object") continue;
    const sk = keyOf(item as Json, p.sub);
    if (sk !== undefined) delete (item as Json)[sk];
  }
}

/** The resource as the client asked it: only `attributes` (plus id, schemas), or all but `excluded`. */
export function project(resource: Json, attributes: AttrPath[] | null, excluded: AttrPath[] | null): Json {
  if (attributes) {
    const out: Json = { schemas: resource.schemas, id: resource.id };
    for (const p of attributes) copyPath(resource, out, p);
    return out;
  }
  if (excluded) {
    const out = structuredClone(resource);
    for (const p of excluded) removePath(out, p);
    return out;
  }
  return resource;
}
