// PATCH (RFC 7644 §3.5.2) applied to a resource as SCIM JSON: `add`, `replace` and `remove`, with
// and without `path`, value filters in paths (`emails[type eq "work"].value`), sub-attributes,
// extension attributes (`urn:…:enterprise:2.0:User:department`). The result is then stored as a
// PUT would store it, so PATCH and PUT cannot disagree. What real clients send is accepted:
// Entra's PascalCase `op` (`Replace`, `Add`), `add` on a single-valued attribute (a replace), and
// a `replace` aimed by a filter at a value that does not exist yet (it is added, as `add` would).
import { PATCH_SCHEMA } from "./schemas.ts";
import { invalidPath, invalidSyntax, invalidValue, noTarget } from "./errors.ts";
import { parseAttrPath, parsePatchPath, type AttrPath, type Filter } from "./filter-parse.ts";
import { keyOf, matches, type ResourceKind } from "./filter-match.ts";

type Json = Record<string, unknown>;

export interface PatchOp {
  op: "add" | "replace" | "remove";
  path: string | null;
  value: unknown;
}

/** The operations of a PatchOp message; 400 when it is not one. */
export function patchOpsOf(body: unknown): PatchOp[] {
  if (!body || typeof body !== "object" || Array.isArray(body)) throw invalidSyntax("A PatchOp must be a JSON object");
  const b = body as Json;
  const schemas = b.schemas;
  if (!Array.isArray(schemas) || !schemas.includes(PATCH_SCHEMA))
    throw invalidSyntax(`A PatchOp must name the schema ${PATCH_SCHEMA}`);
  const ops = b[keyOf(b, "Operations") ?? "Operations"];
  if (!Array.isArray(ops) || ops.length === 0) throw invalidSyntax("Operations must be a non-empty array");
  return ops.map((raw, i) => {
    if (!raw || typeof raw !== "object") throw invalidSyntax(`Operations[${i}] must be an object`);
    const o = raw as Json;
    const op = String(o[keyOf(o, "op") ?? "op"] ?? "").toLowerCase();
    if (op !== "add" && op !== "replace" && op !== "remove")
      throw invalidSyntax(`Operations[${i}].op must be add, replace or remove`);
    const path = o[keyOf(o, "path") ?? "path"];
    if (path !== undefined && path !== null && typeof path !== "string")
      throw invalidPath(`Operations[${i}].path must be a string`);
    const value = o[keyOf(o, "value") ?? "value"];
    if (op !== "remove" && value === undefined) throw invalidValue(`Operations[${i}] needs a value`);
    if (op === "remove" && (path === undefined || path === null || path === ""))
      throw noTarget(`Operations[${i}]: remove needs a path`);
    return { op, path: typeof path === "string" && path !== "" ? path : null, value };
  });
}

const isCore = (schema: string | null) => schema === null || /:core:2\.0:(User|Group)$/i.test(schema);

/** The object an attribute of `schema` lives in (an extension's object, created when `create`). */
function container(resource: Json, schema: string | null, create: boolean): Json | undefined {
  if (isCore(schema)) return resource;
  const k = keyOf(resource, schema!) ?? schema!;
  const v = resource[k];
  if (v && typeof v === "object" && !Array.isArray(v)) return v as Json;
  if (!create) return undefined;
  resource[k] = {};
  return resource[k] as Json;
}

const isObject = (v: unknown): v is Json => !!v && typeof v === "object" && !Array.isArray(v);

/** Sets `name` in `obj` (an existing key of another case is reused). */
function put(obj: Json, name: string, v: unknown): void {
  obj[keyOf(obj, name) ?? name] = v;
}

/** A value merged into an attribute: arrays appended (equal values once), objects merged, else replaced. */
function addTo(obj: Json, name: string, value: unknown): void {
  const k = keyOf(obj, name) ?? name;
  const cur = obj[k];
  if (Array.isArray(cur) || (Array.isArray(value) && cur === undefined)) {
    const list = Array.isArray(cur) ? [...cur] : [];
    for (const v of Array.isArray(value) ? value : [value]) {
      if (!list.some((x) => JSON.stringify(x) === JSON.stringify(v))) list.push(v);
    }
    obj[k] = list;
  } else if (isObject(cur) && isObject(value)) obj[k] = { ...cur, ...value };
  else obj[k] = value;
}

/** `replace` of an attribute: arrays and simple values replaced, objects merged. */
function replaceIn(obj: Json, name: string, value: unknown): void {
  const k = keyOf(obj, name) ?? name;
  const cur = obj[k];
  if (isObject(cur) && isObject(value)) obj[k] = { ...cur, ...value };
  else obj[k] = value;
}

/** The attribute (`name.sub` allowed) of a no-path value's key, applied by `apply`. */
function applyKey(resource: Json, key: string, value: unknown, op: "add" | "replace"): void {
  if (/^urn:/i.test(key) && isObject(value) && !/:core:2\.0:(User|Group)$/i.test(key)) {
    // An extension's whole object: each of its attributes.
    const ext = container(resource, key, true)!;
    for (const [k, v] of Object.entries(value)) (op === "add" ? addTo : replaceIn)(ext, k, v);
    return;
  }
  if (/^urn:/i.test(key) && isObject(value)) {
    for (const [k, v] of Object.entries(value)) applyKey(resource, k, v, op);
    return;
  }
  const p = parseAttrPath(key, invalidValue);
  const obj = container(resource, p.schema, true)!;
  if (p.sub === null) {
    (op === "add" ? addTo : replaceIn)(obj, p.attr, value);
    return;
  }
  const k = keyOf(obj, p.attr) ?? p.attr;
  const cur = isObject(obj[k]) ? (obj[k] as Json) : {};
  put(cur, p.sub, value);
  obj[k] = cur;
}

/** `type eq "work"` (and such conjunctions): the values a new element takes when a filter matched none. */
function seedOf(filter: Filter): Json | null {
  if (filter.op === "eq" && filter.path.sub === null && isCore(filter.path.schema))
    return { [filter.path.attr]: filter.value };
  if (filter.op === "and") {
    const l = seedOf(filter.left);
    const r = seedOf(filter.right);
    return l && r ? { ...l, ...r } : null;
  }
  return null;
}

function applyFiltered(
  obj: Json,
  kind: ResourceKind,
  attr: AttrPath,
  filter: Filter,
  sub: string | null,
  op: PatchOp,
): void {
  const k = keyOf(obj, attr.attr) ?? attr.attr;
  const list = Array.isArray(obj[k]) ? [...(obj[k] as unknown[])] : [];
  const hits = list
    .map((item, i) => (isObject(item) && matches(filter, item, kind, attr) ? i : -1))
    .filter((i) => i >= 0);
  if (op.op === "remove") {
    if (sub === null) obj[k] = list.filter((_, i) => !hits.includes(i));
    else for (const i of hits) delete (list[i] as Json)[keyOf(list[i] as Json, sub) ?? sub];
    if (sub !== null) obj[k] = list;
    return;
  }
  if (hits.length === 0) {
    const seed = seedOf(filter);
    if (!seed) throw noTarget(`no value of ${attr.attr} matches the filter`);
    list.push(sub === null ? { ...seed, ...(isObject(op.value) ? op.value : {}) } : { ...seed, [sub]: op.value });
    obj[k] = list;
    return;
  }
  for (const i of hits) {
    const item = { ...(list[i] as Json) };
    if (sub !== null) put(item, sub, op.value);
    else if (isObject(op.value)) Object.assign(item, op.value);
    else throw invalidValue(`the value for ${attr.attr}[…] must be an object`);
    list[i] = item;
  }
  obj[k] = list;
}

/** Values of a multi-valued attribute a `remove` with a value names (Entra's member removal). */
function removeValues(obj: Json, name: string, value: unknown): void {
  const k = keyOf(obj, name);
  if (k === undefined || !Array.isArray(obj[k])) return;
  const gone = (Array.isArray(value) ? value : [value]).map((v) =>
    isObject(v) && "value" in v ? String(v.value) : JSON.stringify(v),
  );
  obj[k] = (obj[k] as unknown[]).filter((item) => {
    const id = isObject(item) && "value" in item ? String(item.value) : JSON.stringify(item);
    return !gone.includes(id);
  });
}

/** `resource` after `ops`, in order (a copy: `resource` is left as it was). */
export function applyPatch(resource: Json, ops: PatchOp[], kind: ResourceKind): Json {
  const out = structuredClone(resource);
  for (const op of ops) {
    if (op.path === null) {
      if (!isObject(op.value)) throw invalidValue(`${op.op} without a path needs an object value`);
      for (const [key, v] of Object.entries(op.value)) applyKey(out, key, v, op.op as "add" | "replace");
      continue;
    }
    const pp = parsePatchPath(op.path);
    const obj = container(out, pp.path.schema, op.op !== "remove");
    if (!obj) continue; // removing from an extension the resource does not have
    if (pp.filter) {
      applyFiltered(obj, kind, pp.path, pp.filter, pp.sub, op);
      continue;
    }
    const { attr, sub } = pp.path;
    if (op.op === "remove") {
      if (sub === null) {
        if (op.value !== undefined && op.value !== null) removeValues(obj, attr, op.value);
        else delete obj[keyOf(obj, attr) ?? attr];
        continue;
      }
      const k = keyOf(obj, attr);
      const cur = k === undefined ? undefined : obj[k];
      for (const item of Array.isArray(cur) ? cur : [cur]) if (isObject(item)) delete item[keyOf(item, sub) ?? sub];
      continue;
    }
    if (sub === null) {
      (op.op === "add" ? addTo : replaceIn)(obj, attr, op.value);
      continue;
    }
    const k = keyOf(obj, attr) ?? attr;
    const cur = obj[k];
    if (Array.isArray(cur))
      obj[k] = cur.map((item) => (isObject(item) ? { ...item, [keyOf(item, sub) ?? sub]: op.value } : item));
    else {
      const next = isObject(cur) ? { ...cur } : {};
      put(next, sub, op.value);
      obj[k] = next;
    }
  }
  return out;
}
