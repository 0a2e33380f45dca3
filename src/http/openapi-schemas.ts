// Response schemas of the OpenAPI document, attached by construction: a route that declares no
// response schema gets the record of the resource its path names (the last literal segment:
// `/users/{user_uuid}/groups` answers groups), as an item or as an `{items, filtered, total}`
// collection, so generated clients come out typed without every route repeating it.
import { z } from "zod";
import { TENANT_MIN_LENGTH } from "../services/identity/tenant-password-policy.ts";

const uuid = z.string().describe("UUID");
const nullableString = z.string().nullable();

export const errorBody = z
  .object({
    error_id: z
      .string()
      .describe("Machine-readable code: `invalid-data`, `not-found`, `unauthorized`, `forbidden`, `conflict`…"),
    message: z.string(),
    resource: z.string(),
    resource_id: z.unknown().optional(),
    timestamp: z.number(),
    details: z.record(z.string(), z.unknown()),
  })
  .describe("The one error body of every 4xx and 5xx answer");

const email = z.object({ uuid, address: z.string(), main: z.boolean(), confirmed: z.boolean() });

const user = z.object({
  uuid,
  username: nullableString,
  firstname: nullableString,
  lastname: nullableString,
  purpose: z.enum(["user", "internal", "external_api"]),
  authentication_method: z.string(),
  enabled: z.boolean(),
  tenant_uuid: uuid,
  emails: z.array(email),
  locale: nullableString.describe(
    "The language of the user's pages and mails (BCP 47, e.g. `fr`, `pt-BR`); null: none chosen",
  ),
});

const tenant = z.object({
  uuid,
  parent_uuid: uuid,
  name: nullableString,
  slug: z.string(),
  contact: nullableString,
  phone: nullableString,
  default_authentication_method: z.string(),
  domain_names: z.array(z.string()),
  address: z.object({
    line_1: nullableString,
    line_2: nullableString,
    city: nullableString,
    state: nullableString,
    country: nullableString,
    zip_code: nullableString,
  }),
  password_policy: z.object({
    min_length: z
      .number()
      .int()
      .min(TENANT_MIN_LENGTH.min)
      .max(TENANT_MIN_LENGTH.max)
      .nullable()
      .describe("The tenant's own minimum password length; null: inherited"),
    effective_min_length: z
      .number()
      .int()
      .min(1)
      .max(TENANT_MIN_LENGTH.max)
      .describe("The minimum in force: the largest set on the tenant, its ancestors or the service"),
    inherited_from: nullableString.describe(
      "The ancestor whose minimum is in force; null: the tenant's own or the service's",
    ),
  }),
});

const group = z.object({
  uuid,
  name: z.string(),
  slug: z.string(),
  tenant_uuid: uuid,
  read_only: z.boolean(),
  system_managed: z.boolean(),
});

const policy = z.object({
  uuid,
  tenant_uuid: uuid,
  name: z.string(),
  slug: z.string(),
  description: nullableString,
  acl: z.array(z.string()),
  read_only: z.boolean(),
  shared: z.boolean(),
});

// `user_uuid` is null for a client's own session (OAuth 2.0 client credentials, RFC 6749 §4.4): no user.
const session = z.object({ uuid, mobile: z.boolean(), tenant_uuid: uuid, user_uuid: uuid.nullable() });

const refreshToken = z.object({
  client_id: z.string(),
  created_at: z.string(),
  mobile: z.boolean(),
  user_uuid: uuid,
  tenant_uuid: uuid,
  metadata: z.record(z.string(), z.unknown()),
});

const token = z.object({
  token: z.string(),
  auth_id: z.string(),
  xivo_user_uuid: nullableString,
  xivo_uuid: nullableString,
  issued_at: z.string(),
  expires_at: z.string(),
  utc_issued_at: z.string(),
  utc_expires_at: z.string(),
  acl: z.array(z.string()),
  metadata: z.record(z.string(), z.unknown()),
  session_uuid: uuid,
  remote_addr: z.string(),
  user_agent: z.string(),
  refresh_token: z.string().nullable().optional(),
});

const domain = z.object({ uuid, name: z.string() });
const externalAuth = z.object({
  type: z.string(),
  data: z.record(z.string(), z.unknown()),
  enabled: z.boolean(),
  plugin_info: z.record(z.string(), z.unknown()),
});

/** Named records: `components.schemas` entries, referenced by `$ref`. */
export const namedSchemas: Record<string, z.ZodType> = {
  Error: errorBody,
  User: user,
  Tenant: tenant,
  Group: group,
  Policy: policy,
  Session: session,
  RefreshToken: refreshToken,
  Token: token,
  Domain: domain,
  ExternalAuth: externalAuth,
};

/** The record a path segment names (its last literal segment, singular or plural). */
const RECORD_OF_SEGMENT: Record<string, string> = {
  user: "User",
  users: "User",
  tenant: "Tenant",
  tenants: "Tenant",
  groups: "Group",
  policies: "Policy",
  sessions: "Session",
  tokens: "RefreshToken",
  domains: "Domain",
  external: "ExternalAuth",
};

type Json = Record<string, unknown>;

/** What a successful answer that declares no schema of its own holds, decided from its path alone. */
type DefaultShape =
  | { kind: "record"; name: string }
  | { kind: "collection"; name: string }
  | { kind: "token" }
  | { kind: "strings" }
  | { kind: "object" };

/** Paths whose first segment does not mean "records of this service" (plugin-defined shapes). */
const FOREIGN_ROOTS = new Set(["external", "idp", "admin"]);

function defaultShape(method: string, path: string): DefaultShape {
  const segments = path.split("/").filter(Boolean);
  const endsWithParam = /^\{.*\}$/.test(segments.at(-1) ?? "");
  const literal = segments.filter((s) => !/^\{.*\}$/.test(s));
  const word = literal.at(-1) ?? "";
  if (word === "token" && (method === "post" || method === "get")) return { kind: "token" };
  if (path === "/idp") return { kind: "strings" };
  const name = FOREIGN_ROOTS.has(literal[0] ?? "") && word !== "external" ? undefined : RECORD_OF_SEGMENT[word];
  if (name && method === "get") return endsWithParam ? { kind: "record", name } : { kind: "collection", name };
  if (name && method === "post" && !endsWithParam) return { kind: "record", name };
  if (name && method === "put" && endsWithParam) return { kind: "record", name }; // compatibility.put_responses: wazo
  return { kind: "object" };
}

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

const collectionOf = (items: Json): Json => ({
  type: "object",
  required: ["items", "total"],
  properties: { items: { type: "array", items }, filtered: { type: "integer" }, total: { type: "integer" } },
});

/** The OpenAPI schema of a successful JSON answer of `method path` that declares none of its own. */
export function defaultSuccessSchema(method: string, path: string): Json {
  const shape = defaultShape(method, path);
  switch (shape.kind) {
    case "token":
      return { type: "object", required: ["data"], properties: { data: ref("Token") } };
    case "strings":
      return collectionOf({ type: "string" });
    case "record":
      return ref(shape.name);
    case "collection":
      return collectionOf(ref(shape.name));
    case "object":
      return { type: "object", additionalProperties: true };
  }
}

const collectionZod = (items: z.ZodType) =>
  z.object({ items: z.array(items), filtered: z.number().int().optional(), total: z.number().int() });

/** The same answer as a zod schema, which tests hold every 2xx answer to (tests/http/route-matrix.test.ts). */
export function defaultSuccessZod(method: string, path: string): z.ZodType {
  const shape = defaultShape(method, path);
  switch (shape.kind) {
    case "token":
      return z.object({ data: token });
    case "strings":
      return collectionZod(z.string());
    case "record":
      return namedSchemas[shape.name]!;
    case "collection":
      return collectionZod(namedSchemas[shape.name]!);
    case "object":
      return z.record(z.string(), z.unknown());
  }
}
