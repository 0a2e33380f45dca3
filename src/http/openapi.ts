// The OpenAPI document, generated from the routes' own declarations and zod schemas (never by
// hand). Parameters are ordered headers, then path, then body (INTERFACE.md §4.1.3).
import { z } from "zod";
import type { RouteSpec } from "./route.ts";

type Json = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: "input" | "output"): Json {
  try {
    const out = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Json;
    delete out.$schema;
    return out;
  } catch {
    return {};
  }
}

function objectProperties(schema: z.ZodType | undefined): Array<[string, Json, boolean]> {
  if (!schema) return [];
  const js = jsonSchema(schema, "input");
  const props = (js.properties ?? {}) as Record<string, Json>;
  const required = new Set((js.required ?? []) as string[]);
  return Object.entries(props).map(([k, v]) => [k, v, required.has(k)]);
}

const ERROR_BODY = {
  type: "object",
  required: ["error_id", "message", "resource", "timestamp", "details"],
  properties: {
    error_id: { type: "string" },
    message: { type: "string" },
    resource: { type: "string" },
    resource_id: {},
    timestamp: { type: "number" },
    details: { type: "object" },
  },
};

export function buildOpenApi(specs: RouteSpec[], basePath = "/0.1"): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const spec of specs) {
    const parameters: Json[] = [];
    if (spec.acl !== undefined) {
      parameters.push({ name: "X-Auth-Token", in: "header", required: false, schema: { type: "string" }, description: "Token (or `Authorization: Bearer <token>`)" });
      if (!spec.noTenant) parameters.push({ name: "Wazo-Tenant", in: "header", required: false, schema: { type: "string" }, description: "Act in this sub-tenant" });
    }
    for (const [name, description] of Object.entries(spec.headers ?? {})) {
      parameters.push({ name, in: "header", required: false, schema: { type: "string" }, description });
    }
    const pathNames = [...spec.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const paramSchemas = new Map(objectProperties(spec.params).map(([k, v]) => [k, v]));
    for (const name of pathNames) parameters.push({ name, in: "path", required: true, schema: paramSchemas.get(name) ?? { type: "string" } });
    for (const [name, schema, required] of objectProperties(spec.query)) parameters.push({ name, in: "query", required, schema });

    const responses: Record<string, Json> = {};
    for (const [code, r] of Object.entries(spec.responses)) {
      const desc = typeof r === "string" ? { description: r } : r;
      const entry: Json = { description: desc.description };
      if (Number(code) >= 400) entry.content = { "application/json": { schema: ERROR_BODY } };
      else if (typeof r !== "string" && r.schema) entry.content = { [r.contentType ?? "application/json"]: { schema: jsonSchema(r.schema, "output") } };
      responses[code] = entry;
    }
    const operation: Json = {
      tags: [spec.tag],
      summary: spec.summary,
      ...(spec.description ? { description: spec.description } : {}),
      parameters,
      responses,
    };
    if (spec.acl !== undefined) {
      operation["x-required-acl"] = spec.acl;
      operation.description = `${spec.description ? `${spec.description}\n\n` : ""}**Required ACL:** \`${spec.acl}\``;
    }
    if (spec.body) {
      const schema = jsonSchema(spec.body, "input");
      const types = spec.bodyType === "form" ? ["multipart/form-data", "application/x-www-form-urlencoded"] : ["application/json"];
      operation.requestBody = { required: true, content: Object.fromEntries(types.map((t) => [t, { schema }])) };
    }
    (paths[spec.path] ??= {})[spec.method] = operation;
  }
  return {
    openapi: "3.1.0",
    info: { title: "Tessera authentication service", version: "0.1", description: "wazo-auth compatible REST API" },
    servers: [{ url: basePath }],
    "x-xivo-port": 9497,
    "x-xivo-name": "auth",
    paths,
  };
}
