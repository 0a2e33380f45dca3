// zod → the 400 body of docs/api.md: `details` per field `{constraint_id, constraint,
// message}`, nested like the request body. Also the few field types shared by every route.
import { z } from "zod";
import { InvalidData, type Details } from "./errors.ts";

type AnySchema = z.core.$ZodType;

/** Walks a schema down `path`, through wrappers, to the field schema an issue is about. */
function schemaAt(schema: AnySchema | undefined, path: readonly PropertyKey[]): AnySchema | undefined {
  let current = schema;
  for (let i = 0; i <= path.length && current; ) {
    const def = (current as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
    const inner = (def.innerType ?? (def.type === "pipe" ? def.in : undefined)) as AnySchema | undefined;
    if (inner) {
      current = inner;
      continue;
    }
    if (i === path.length) break;
    const key = path[i++];
    if (def.type === "object") current = (def.shape as Record<string, AnySchema>)[String(key)];
    else if (def.type === "array") current = def.element as AnySchema;
    else if (def.type === "record") current = def.valueType as AnySchema;
    else return undefined;
  }
  return current;
}

function bag(schema: AnySchema | undefined): Record<string, unknown> {
  return ((schema as { _zod?: { bag?: Record<string, unknown> } } | undefined)?._zod?.bag ?? {}) as Record<
    string,
    unknown
  >;
}

interface FieldError {
  constraint_id: string;
  constraint: unknown;
  message: string;
}

/** The input value an issue is about (zod 4 issues do not carry it unless asked). */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const key of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

function describeIssue(issue: z.core.$ZodIssue, root: AnySchema | undefined, input: unknown): FieldError {
  const field = schemaAt(root, issue.path);
  const b = bag(field);
  const params = (issue as { params?: { constraint_id?: string; constraint?: unknown } }).params;
  if (params?.constraint_id)
    return { constraint_id: params.constraint_id, constraint: params.constraint ?? null, message: issue.message };
  switch (issue.code) {
    case "invalid_type": {
      const value = valueAt(input, issue.path);
      if (value === undefined)
        return { constraint_id: "required", constraint: true, message: "Missing data for required field." };
      if (value === null) return { constraint_id: "not_null", constraint: true, message: "Field may not be null." };
      const expected =
        issue.expected === "number" || issue.expected === "int"
          ? "integer"
          : issue.expected === "object"
            ? "dict"
            : issue.expected === "array"
              ? "list"
              : issue.expected;
      return { constraint_id: "type", constraint: expected, message: `Not a valid ${expected}.` };
    }
    case "too_small":
    case "too_big": {
      if (issue.origin === "string" || issue.origin === "array" || issue.origin === "set") {
        const min = (b.minimum ?? b.minLength ?? (issue.code === "too_small" ? issue.minimum : undefined)) as
          | number
          | undefined;
        const max = (b.maximum ?? b.maxLength ?? (issue.code === "too_big" ? issue.maximum : undefined)) as
          | number
          | undefined;
        const constraint = {
          ...(min !== undefined ? { min: Number(min) } : {}),
          ...(max !== undefined ? { max: Number(max) } : {}),
        };
        const message =
          min !== undefined && max !== undefined
            ? `Length must be between ${min} and ${max}.`
            : min !== undefined
              ? `Shorter than minimum length ${min}.`
              : `Longer than maximum length ${max}.`;
        return { constraint_id: "length", constraint, message };
      }
      const min = (b.minimum ?? (issue.code === "too_small" ? issue.minimum : undefined)) as number | undefined;
      const max = (b.maximum ?? (issue.code === "too_big" ? issue.maximum : undefined)) as number | undefined;
      const constraint = {
        ...(min !== undefined ? { min: Number(min) } : {}),
        ...(max !== undefined ? { max: Number(max) } : {}),
      };
      const message =
        min !== undefined && max !== undefined
          ? `Must be greater than or equal to ${min} and less than or equal to ${max}.`
          : min !== undefined
            ? `Must be greater than or equal to ${min}.`
            : `Must be less than or equal to ${max}.`;
      return { constraint_id: "range", constraint, message };
    }
    case "invalid_format": {
      if (issue.format === "email")
        return { constraint_id: "email", constraint: true, message: "Not a valid email address." };
      if (issue.format === "url")
        return { constraint_id: "url", constraint: { schemes: ["http", "https"] }, message: "Not a valid URL." };
      if (issue.format === "uuid" || issue.format === "guid")
        return { constraint_id: "uuid", constraint: true, message: "Not a valid UUID." };
      const pattern =
        (issue as { pattern?: string }).pattern ??
        String(b.patterns ? [...(b.patterns as Set<RegExp>)][0]?.source : "");
      return { constraint_id: "regex", constraint: pattern, message: "String does not match expected pattern." };
    }
    case "invalid_value":
      return {
        constraint_id: "enum",
        constraint: { choices: issue.values },
        message: `Must be one of: ${issue.values.join(", ")}.`,
      };
    case "invalid_union":
      return { constraint_id: "type", constraint: "union", message: issue.message || "Invalid value." };
    default:
      return { constraint_id: "predicate", constraint: null, message: issue.message };
  }
}

/** The nested `details` object of a failed parse: one entry per invalid field. */
export function zodDetails(error: z.ZodError, root?: AnySchema, input?: unknown): Details {
  const details: Details = {};
  for (const issue of error.issues) setDetail(details, issue.path.map(String), () => describeIssue(issue, root, input));
  return details;
}

/**
 * Puts a field's error at `path` in a nested `details` (the first error of a field wins). Field
 * names come from the request: only own properties are read and they are defined, never assigned,
 * so a body key `__proto__` stays a key and never reaches `Object.prototype`.
 */
export function setDetail(details: Details, path: readonly string[], error: () => unknown): void {
  const keys = path.length ? path : ["_schema"];
  let node = details;
  for (const key of keys.slice(0, -1)) {
    const next = Object.hasOwn(node, key) ? node[key] : undefined;
    if (typeof next !== "object" || next === null || "constraint_id" in next) define(node, key, {});
    node = node[key] as Details;
  }
  const leaf = keys[keys.length - 1]!;
  if (!Object.hasOwn(node, leaf)) define(node, leaf, error());
}

function define(node: Details, key: string, value: unknown): void {
  Object.defineProperty(node, key, { value, enumerable: true, writable: true, configurable: true });
}

export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, resource: string): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw new InvalidData(resource, zodDetails(result.error, schema, input));
  return result.data;
}

// ---- shared field types (marshmallow-compatible coercions, wazo-auth's request parsing) ----

const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export const isUuid = (s: string) => UUID_RE.test(s);

/** A canonical UUID in a path segment; anything else is a route miss (404). */
export const uuidParam = z
  .string()
  .regex(UUID_RE)
  .transform((s) => s.toLowerCase());

/** A UUID in a body: accepts the forms Python's uuid.UUID parses, normalised to canonical lowercase. */
export const uuidField = z.string().transform((s, ctx) => {
  const hex = s
    .trim()
    .replace(/^urn:uuid:/i, "")
    .replace(/^\{|\}$/g, "")
    .replaceAll("-", "");
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) {
    ctx.addIssue({ code: "custom", message: "Not a valid UUID.", params: { constraint_id: "uuid", constraint: true } });
    return z.NEVER;
  }
  const h = hex.toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
});

/**
 * Integers accept numeric strings and floats (truncated), never booleans. The bounds live on the
 * inner schema so the OpenAPI document states them (`minimum`, `maximum`).
 */
export const intField = (min: number, max: number) =>
  z.preprocess((v) => {
    if (typeof v === "string" && v.trim() !== "" && !Number.isNaN(Number(v))) return Math.trunc(Number(v));
    if (typeof v === "number" && Number.isFinite(v)) return Math.trunc(v);
    return v;
  }, z.number().int().min(min).max(max));

const TRUE_WORDS = new Set(["true", "1", "yes", "on", "t", "y"]);
const FALSE_WORDS = new Set(["false", "0", "no", "off", "f", "n"]);

/** Booleans accept true/false, 1/0 and the usual words (case-insensitive). */
export const boolField = () =>
  z.preprocess((v) => {
    if (typeof v === "string") {
      const w = v.toLowerCase();
      if (TRUE_WORDS.has(w)) return true;
      if (FALSE_WORDS.has(w)) return false;
    }
    if (v === 1) return true;
    if (v === 0) return false;
    return v;
  }, z.boolean());

/** A BCP 47 language tag (RFC 5646: `fr`, `pt-BR`, `de-CH`), stored in its canonical case. */
export const localeTag = () =>
  z
    .string()
    .max(35)
    .regex(/^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/, "a BCP 47 language tag, such as fr or pt-BR")
    .transform((tag, ctx) => {
      try {
        return Intl.getCanonicalLocales(tag)[0]!;
      } catch {
        ctx.addIssue({ code: "custom", message: "a BCP 47 language tag, such as fr or pt-BR" });
        return z.NEVER;
      }
    });
