// A parsed SCIM filter (filter-parse.ts) evaluated on a resource as SCIM JSON (RFC 7644 §3.4.2.2):
// a multi-valued attribute matches when one of its values does; strings compare case-insensitively
// unless the schema says `caseExact` (schemas.ts); `ne` is the negation of `eq` (an absent
// attribute is "not equal"); ordering compares strings (ISO dateTimes order as text) and numbers.
import type { AttrPath, Filter, Value } from "./filter-parse.ts";
import { caseExact } from "./schemas.ts";

type Json = Record<string, unknown>;
export type ResourceKind = "User" | "Group";

/** The key of `obj` equal to `name` but for case (attribute names are case-insensitive, RFC 7643 §2.1). */
export function keyOf(obj: Json, name: string): string | undefined {
  if (name in obj) return name;
  const lower = name.toLowerCase();
  return Object.keys(obj).find((k) => k.toLowerCase() === lower);
}

const isCore = (schema: string | null) => schema === null || /:core:2\.0:(User|Group)$/i.test(schema);

/** The object a path's attribute lives in: the resource, or its extension's object. */
export function baseOf(resource: Json, schema: string | null): Json | undefined {
  if (isCore(schema)) return resource;
  const k = keyOf(resource, schema!);
  const v = k === undefined ? undefined : resource[k];
  return v && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined;
}

/** Every value a path names, multi-valued attributes flattened. */
export function valuesAt(resource: Json, path: AttrPath): unknown[] {
  const base = baseOf(resource, path.schema);
  if (!base) return [];
  const k = keyOf(base, path.attr);
  if (k === undefined) return [];
  const top = base[k];
  const items = Array.isArray(top) ? top : [top];
  // A multi-valued complex attribute compared as a whole compares its `value`s (RFC 7644
  // §3.4.2.2's `emails co "example.com"`).
  if (path.sub === null && Array.isArray(top))
    return items
      .map((v) => (v && typeof v === "object" ? (v as Json)[keyOf(v as Json, "value") ?? "value"] : v))
      .filter((v) => v !== undefined && v !== null);
  if (path.sub === null) return items.filter((v) => v !== undefined && v !== null);
  return items.flatMap((item) => {
    if (!item || typeof item !== "object") return [];
    const sk = keyOf(item as Json, path.sub!);
    const v = sk === undefined ? undefined : (item as Json)[sk];
    return v === undefined || v === null ? [] : Array.isArray(v) ? v : [v];
  });
}

const present = (v: unknown) =>
  v !== undefined && v !== null && v !== "" && !(Array.isArray(v) && v.length === 0) && typeof v !== "object";

/** Entra sends booleans as strings (`"True"`): a boolean attribute compared with one reads it as a boolean. */
function coerce(attrValue: unknown, filterValue: Value): Value {
  if (typeof attrValue === "boolean" && typeof filterValue === "string") {
    if (/^true$/i.test(filterValue)) return true;
    if (/^false$/i.test(filterValue)) return false;
  }
  return filterValue;
}

function compareOne(op: string, attrValue: unknown, raw: Value, exact: boolean): boolean {
  const value = coerce(attrValue, raw);
  if (typeof attrValue === "string" && typeof value === "string") {
    const a = exact ? attrValue : attrValue.toLowerCase();
    const b = exact ? value : value.toLowerCase();
    switch (op) {
      case "eq":
        return a === b;
      case "co":
        return a.includes(b);
      case "sw":
        return a.startsWith(b);
      case "ew":
        return a.endsWith(b);
      case "gt":
        return a > b;
      case "ge":
        return a >= b;
      case "lt":
        return a < b;
      case "le":
        return a <= b;
    }
    return false;
  }
  if (typeof attrValue === "number" && typeof value === "number") {
    switch (op) {
      case "eq":
        return attrValue === value;
      case "gt":
        return attrValue > value;
      case "ge":
        return attrValue >= value;
      case "lt":
        return attrValue < value;
      case "le":
        return attrValue <= value;
    }
    return false;
  }
  if (typeof attrValue === "boolean" && typeof value === "boolean") return op === "eq" && attrValue === value;
  return false;
}

/** The resource's attribute path names a sub-attribute in `context` (inside `attr[...]`). */
function exactness(kind: ResourceKind, outer: AttrPath | null, path: AttrPath): boolean {
  return outer
    ? caseExact(kind, outer.schema, outer.attr, path.attr)
    : caseExact(kind, path.schema, path.attr, path.sub);
}

/** True when `resource` matches `filter`. `outer`: the multi-valued attribute a value filter is inside. */
export function matches(filter: Filter, resource: Json, kind: ResourceKind, outer: AttrPath | null = null): boolean {
  switch (filter.op) {
    case "and":
      return matches(filter.left, resource, kind, outer) && matches(filter.right, resource, kind, outer);
    case "or":
      return matches(filter.left, resource, kind, outer) || matches(filter.right, resource, kind, outer);
    case "not":
      return !matches(filter.filter, resource, kind, outer);
    case "pr":
      return valuesAt(resource, filter.path).some(present);
    case "has": {
      const base = baseOf(resource, filter.path.schema);
      const k = base && keyOf(base, filter.path.attr);
      const items = k === undefined || !base ? [] : base[k];
      const list = Array.isArray(items) ? items : items && typeof items === "object" ? [items] : [];
      return list.some(
        (item) => item && typeof item === "object" && matches(filter.filter, item as Json, kind, filter.path),
      );
    }
    case "ne":
      return !matches({ ...filter, op: "eq" }, resource, kind, outer);
    default: {
      const exact = exactness(kind, outer, filter.path);
      const values = valuesAt(resource, filter.path);
      if (filter.value === null) return filter.op === "eq" && values.length === 0;
      return values.some((v) => compareOne(filter.op, v, filter.value, exact));
    }
  }
}
