// PATCH (RFC 7644 §3.5.2) applied to a resource as SCIM JSON by `scim-patch`: `add`, `replace` and
// `remove`, with and without `path`, value filters in paths (`emails[type eq "work"].value`),
// sub-attributes, extension attributes (`urn:…:enterprise:2.0:User:department`). The result is
// then stored as a PUT would store it, so PATCH and PUT cannot disagree. What real clients send is
// normalised first, into the forms the library applies: Entra's PascalCase `op` (`Replace`, `Add`,
// lowered by patchOpsOf), an extension's object given whole in a no-path value (one operation per
// attribute, by its URN path), and Entra's `remove` of `members` naming the values to remove
// (`value: [{"value": id}]`, one `members[value eq "id"]` each). `add` on a single-valued
// attribute replaces it, and a `replace` aimed by a filter at a value that does not exist yet adds
// it (`treatMissingAsAdd`), as Entra expects.
import { scimPatch } from "scim-patch";
import { PATCH_SCHEMA } from "./schemas.ts";
import { invalidPath, invalidSyntax, invalidValue, noTarget } from "./errors.ts";
import { parsePatchPath } from "./filter-parse.ts";
import { keyOf, type ResourceKind } from "./filter-match.ts";

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

const isObject = (v: unknown): v is Json => !!v && typeof v === "object" && !Array.isArray(v);

type LibOp = { op: PatchOp["op"]; path?: string; value?: unknown };

/** The operations in the forms scim-patch applies (see the header). */
function normalised(ops: PatchOp[]): LibOp[] {
  const out: LibOp[] = [];
  for (const o of ops) {
    if (o.path === null && isObject(o.value)) {
      const plain: Json = {};
      for (const [k, v] of Object.entries(o.value)) {
        if (/^urn:/i.test(k) && isObject(v))
          for (const [sub, sv] of Object.entries(v)) out.push({ op: o.op, path: `${k}:${sub}`, value: sv });
        else plain[k] = v;
      }
      if (Object.keys(plain).length) out.push({ op: o.op, value: plain });
    } else if (o.path === null) {
      throw invalidValue(`${o.op} without a path needs an object value`);
    } else if (o.op === "remove" && !o.path.includes("[") && Array.isArray(o.value)) {
      for (const v of o.value)
        out.push({ op: "remove", path: `${o.path}[value eq ${JSON.stringify(isObject(v) ? v.value : v)}]` });
    } else out.push({ op: o.op, path: o.path, value: o.value });
  }
  return out;
}

/** `ops` applied to a copy of `resource` (never changed); 400 with the §3.12 scimType when one cannot apply. */
export function applyPatch(resource: Json, ops: PatchOp[], _kind: ResourceKind): Json {
  // Paths checked by the grammar first: a malformed one is 400 invalidPath, not the library's guess.
  for (const o of ops) if (o.path !== null) parsePatchPath(o.path);
  try {
    return scimPatch(structuredClone(resource) as never, normalised(ops) as never, {
      mutateDocument: true,
      treatMissingAsAdd: true,
    }) as Json;
  } catch (e) {
    const detail = e instanceof Error ? e.message : String(e);
    if ((e as { scimCode?: string }).scimCode === "noTarget") throw noTarget(detail);
    throw invalidValue(detail);
  }
}
