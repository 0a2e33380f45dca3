// Every 2xx JSON answer held to the schema the OpenAPI document gives it: the route's own declared schema,
// or the record its path names (src/http/openapi-schemas.ts). Types are checked by zod; fields the schema
// does not name are reported too, since a generated client would not know them.
import type { z } from "zod";
import { defaultSuccessZod } from "../../src/http/openapi-schemas.ts";
import type { RouteSpec } from "../../src/http/route.ts";
import type { TestResponse } from "./app.ts";

/** The schema a route documents for `status`, or null when that answer is not JSON. */
export function documentedSchema(spec: RouteSpec, status: number): z.ZodType | null {
  const declared = spec.responses[status];
  if (typeof declared === "object") {
    if (declared.contentType && !declared.contentType.includes("json")) return null;
    if (declared.schema) return declared.schema;
  }
  if (status === 204 || spec.method === "head") return null;
  return defaultSuccessZod(spec.method, spec.path);
}

/** What is wrong with a 2xx answer of `spec` (empty when it matches its schema, or is not JSON). */
export function contractViolations(spec: RouteSpec, r: TestResponse): string[] {
  if (r.status < 200 || r.status >= 300) return [];
  if (!(r.headers.get("content-type") ?? "").includes("json")) return [];
  const schema = documentedSchema(spec, r.status);
  if (!schema) return [];
  const parsed = schema.safeParse(r.json);
  if (!parsed.success)
    return parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).slice(0, 5);
  return undocumentedKeys(schema, r.json, "");
}

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  innerType?: z.ZodType;
  options?: z.ZodType[];
  in?: z.ZodType;
};

/** Keys present in `value` that an object schema inside `schema` does not declare. */
function undocumentedKeys(schema: z.ZodType, value: unknown, at: string): string[] {
  const def = (schema as unknown as { def: Def }).def;
  switch (def.type) {
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "readonly":
      return value == null ? [] : undocumentedKeys(def.innerType!, value, at);
    case "pipe":
      return undocumentedKeys(def.in!, value, at);
    case "array":
      return Array.isArray(value) ? value.flatMap((v, i) => undocumentedKeys(def.element!, v, `${at}[${i}]`)) : [];
    case "union": {
      const reports = def.options!.filter((o) => o.safeParse(value).success).map((o) => undocumentedKeys(o, value, at));
      return reports.find((r) => r.length === 0) ?? reports[0] ?? [];
    }
    case "object": {
      if (!value || typeof value !== "object") return [];
      const shape = def.shape!;
      return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) =>
        k in shape ? undocumentedKeys(shape[k]!, v, `${at}.${k}`) : [`${at}.${k}: not in the documented schema`],
      );
    }
    default:
      return [];
  }
}
