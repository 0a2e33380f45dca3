// The OpenAPI document, generated from the routes' own declarations and zod schemas (never by
// hand). Parameters are ordered headers, then path, then body (docs/api.md). What every
// route shares is added here by construction, so no route repeats it: the operationId, the
// security requirement (from the route's ACL), the `Wazo-Tenant` header, the 400/401/403/404
// answers its pipeline can give, and a typed success body when the route declares none.
import { VERSION } from "../boot/version.ts";
import { TAG_DESCRIPTIONS } from "./openapi-tags.ts";
import { z } from "zod";
import type { RouteSpec } from "./route.ts";
import { deriveOperationId } from "./operation-id.ts";
import { defaultSuccessSchema, namedSchemas } from "./openapi-schemas.ts";

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

const ERROR_REF = { $ref: "#/components/schemas/Error" };

const SECURITY_SCHEMES = {
  XAuthToken: { type: "apiKey", in: "header", name: "X-Auth-Token", description: "A token from `POST /0.1/token`" },
  BearerAuth: { type: "http", scheme: "bearer", description: "The same token as `Authorization: Bearer <token>`" },
  BasicAuth: { type: "http", scheme: "basic", description: "Username (or confirmed email address) and password" },
  TokenQuery: {
    type: "apiKey",
    in: "query",
    name: "token",
    description: "The token in the query string (links sent by email)",
  },
};

/** Answers the route pipeline itself can give, whatever the handler does. */
const PIPELINE_ERRORS: Record<number, string> = {
  400: "Invalid request: `details` names each bad field",
  401: "Missing, invalid or expired token, or a `Wazo-Tenant` the token may not act in",
  403: "The token lacks the required ACL",
  404: "No such resource (also for a malformed path parameter)",
};

function security(spec: RouteSpec): Json[] {
  if (spec.method === "post" && spec.path === "/token") return [{ BasicAuth: [] }, {}]; // `{}`: a refresh-token login needs no credentials
  if (spec.acl === undefined) return [];
  const schemes: Json[] = [{ XAuthToken: [] }, { BearerAuth: [] }];
  return spec.tokenFromQuery ? [{ TokenQuery: [] }, ...schemes] : schemes;
}

function pipelineErrors(spec: RouteSpec): number[] {
  const codes: number[] = [];
  if (spec.query || spec.body) codes.push(400);
  if (spec.acl !== undefined) codes.push(401, 403);
  if (spec.params) codes.push(404);
  return codes;
}

function responsesOf(spec: RouteSpec): Record<string, Json> {
  const declared = new Map<number, { description: string; schema?: z.ZodType; contentType?: string }>();
  for (const [code, r] of Object.entries(spec.responses))
    declared.set(Number(code), typeof r === "string" ? { description: r } : r);
  for (const code of pipelineErrors(spec))
    if (!declared.has(code)) declared.set(code, { description: PIPELINE_ERRORS[code]! });
  const responses: Record<string, Json> = {};
  for (const [code, r] of [...declared].sort(([a], [b]) => a - b)) {
    const entry: Json = { description: r.description };
    if (code >= 400) entry.content = { "application/json": { schema: ERROR_REF } };
    else if (r.schema)
      entry.content = { [r.contentType ?? "application/json"]: { schema: jsonSchema(r.schema, "output") } };
    else if (code !== 204 && spec.method !== "head")
      entry.content = { "application/json": { schema: defaultSuccessSchema(spec.method, spec.path) } };
    responses[String(code)] = entry;
  }
  return responses;
}

function parametersOf(spec: RouteSpec): Json[] {
  const parameters: Json[] = [];
  if (spec.acl !== undefined && !spec.noTenant) {
    parameters.push({
      name: "Wazo-Tenant",
      in: "header",
      required: false,
      schema: { type: "string" },
      description: "Act in this tenant (a sub-tenant of the token's tenant): UUID or slug",
    });
  }
  for (const [name, description] of Object.entries(spec.headers ?? {})) {
    // Authorization is described by the security schemes, never as a parameter (OpenAPI 3.1 §4.8.12).
    if (name.toLowerCase() !== "authorization")
      parameters.push({ name, in: "header", required: false, schema: { type: "string" }, description });
  }
  const pathNames = [...spec.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const paramSchemas = new Map(objectProperties(spec.params).map(([k, v]) => [k, v]));
  for (const name of pathNames)
    parameters.push({ name, in: "path", required: true, schema: paramSchemas.get(name) ?? { type: "string" } });
  for (const [name, schema, required] of objectProperties(spec.query))
    parameters.push({ name, in: "query", required, schema });
  return parameters;
}

/** operationId of every route, checked unique: a duplicate is a programming error caught at start. */
export function operationIds(specs: RouteSpec[]): string[] {
  const addPaths = new Set(specs.filter((s) => s.method === "put" && !s.body).map((s) => s.path));
  const ids = specs.map(
    (s) =>
      s.operationId ??
      deriveOperationId({
        method: s.method,
        path: s.path,
        hasBody: !!s.body,
        undoesAdd: s.method === "delete" && addPaths.has(s.path),
      }),
  );
  const seen = new Set<string>();
  for (const [i, id] of ids.entries()) {
    if (seen.has(id))
      throw new Error(
        `duplicate operationId ${id} (${specs[i]!.method.toUpperCase()} ${specs[i]!.path}): give one route an explicit operationId`,
      );
    seen.add(id);
  }
  return ids;
}

export function buildOpenApi(specs: RouteSpec[], basePath = "/0.1"): Json {
  const paths: Record<string, Record<string, Json>> = {};
  const ids = operationIds(specs);
  for (const [i, spec] of specs.entries()) {
    const operation: Json = {
      operationId: ids[i],
      tags: [spec.tag],
      summary: spec.summary,
      ...(spec.description ? { description: spec.description } : {}),
      security: security(spec),
      parameters: parametersOf(spec),
      responses: responsesOf(spec),
    };
    if (spec.acl !== undefined) {
      operation["x-required-acl"] = spec.acl;
      operation.description = `${spec.description ? `${spec.description}\n\n` : ""}**Required ACL:** \`${spec.acl}\``;
    }
    if (spec.body) {
      const schema = jsonSchema(spec.body, "input");
      const types =
        spec.bodyType === "form" ? ["multipart/form-data", "application/x-www-form-urlencoded"] : ["application/json"];
      operation.requestBody = {
        required: !spec.bodyOptional,
        content: Object.fromEntries(types.map((t) => [t, { schema }])),
      };
    }
    (paths[spec.path] ??= {})[spec.method] = operation;
  }
  const tags = [...new Set(specs.map((s) => s.tag))]
    .sort()
    .map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? "" }));
  return {
    openapi: "3.1.0",
    info: {
      title: "Tessera authentication service",
      version: VERSION,
      description: "wazo-auth compatible REST API",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    servers: [{ url: basePath }],
    "x-xivo-port": 9497,
    "x-xivo-name": "auth",
    tags,
    paths,
    components: {
      securitySchemes: SECURITY_SCHEMES,
      schemas: Object.fromEntries(
        Object.entries(namedSchemas).map(([name, schema]) => [name, jsonSchema(schema, "output")]),
      ),
    },
  };
}
