// The route table as test data: every route the app declares (RouteGroup specs), concrete paths for
// it, and a valid sample body generated from its zod schema. Matrix tests iterate over this, so a
// route added later is covered without anyone writing its test.
import { sql } from "drizzle-orm";
import { z } from "zod";
import { routeGroups } from "../../src/app.ts";
import type { AppContext } from "../../src/boot/context.ts";
import { execRows } from "../../src/db/index.ts";
import type { RouteSpec } from "../../src/http/route.ts";

export const allSpecs = (app: AppContext): RouteSpec[] => routeGroups(app).flatMap((g) => g.specs);

export const routeName = (s: RouteSpec) => `${s.method.toUpperCase()} ${s.path}`;

/** Placeholders of a path or ACL template, in order. */
export const placeholders = (template: string) => [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);

/** Names of the query parameters a route declares. */
export function queryNames(spec: RouteSpec): string[] {
  const shape = (spec.query as { shape?: Record<string, unknown> } | undefined)?.shape;
  return shape ? Object.keys(shape) : [];
}

export function fillPath(spec: RouteSpec, values: Record<string, string>, encode = true): string {
  return `/0.1${spec.path.replace(/\{(\w+)\}/g, (_m, n: string) => {
    if (values[n] === undefined) throw new Error(`${routeName(spec)}: no value for {${n}}`);
    return encode ? encodeURIComponent(values[n]!) : values[n]!;
  })}`;
}

type Json = Record<string, unknown>;

/** A value the JSON schema accepts, as small as possible. */
export function sampleOf(schema: Json | undefined): unknown {
  if (!schema) return {};
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  for (const k of ["anyOf", "oneOf"] as const) {
    const options = schema[k] as Json[] | undefined;
    if (options?.length) return sampleOf(options.find((o) => o.type !== "null") ?? options[0]);
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length) return sampleOf(schema.allOf[0] as Json);
  const type = Array.isArray(schema.type)
    ? (schema.type as string[]).find((t) => t !== "null")
    : (schema.type as string | undefined);
  switch (type) {
    case "object": {
      const out: Json = {};
      const props = (schema.properties ?? {}) as Record<string, Json>;
      for (const key of (schema.required as string[] | undefined) ?? []) out[key] = sampleOf(props[key]);
      return out;
    }
    case "array":
      return Array.from({ length: Number(schema.minItems ?? 0) }, () => sampleOf(schema.items as Json));
    case "string":
      if (schema.format === "email") return `s${crypto.randomUUID().slice(0, 6)}@example.org`;
      if (schema.format === "uuid") return crypto.randomUUID();
      return "s".repeat(Math.max(1, Number(schema.minLength ?? 1)));
    case "integer":
    case "number":
      return Number(schema.minimum ?? 0);
    case "boolean":
      return false;
    default:
      return {};
  }
}

/** A valid body for a route, generated from its zod schema; `overrides` win where generation can't know. */
export function sampleBody(spec: RouteSpec, overrides: Record<string, unknown> = {}): unknown {
  if (routeName(spec) in overrides) return overrides[routeName(spec)];
  if (!spec.body) return undefined;
  return sampleOf(z.toJSONSchema(spec.body, { io: "input", unrepresentable: "any" }) as Json);
}

/** Every row of every table, as text: equal snapshots prove a sweep of requests changed nothing. */
export async function snapshotDatabase(app: AppContext): Promise<Record<string, string[]>> {
  const tables = await execRows<{ name: string }>(
    app.db,
    sql`select table_name as name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' order by 1`,
  );
  const out: Record<string, string[]> = {};
  // The outbound queue's attempt bookkeeping moves on its own (retries in the background): its rows, not their state.
  const columns: Record<string, string> = {
    tessera_outbound_delivery: "seq, id, kind, owner_key, ordering_key, payload, tenant_uuid",
  };
  for (const { name } of tables) {
    if (name === "tessera_outbound_owner") continue; // failure streaks, kept by the worker
    const rows = await execRows<{ r: string }>(
      app.db,
      sql.raw(`select row_to_json(t)::text as r from (select ${columns[name] ?? "*"} from "${name}") t`),
    );
    out[name] = rows.map((x) => x.r).sort();
  }
  return out;
}
