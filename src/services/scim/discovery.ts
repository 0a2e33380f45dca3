// The service provider's self-description (RFC 7644 §4, RFC 7643 §5–§7): what it supports
// (ServiceProviderConfig), its resource types, and their schemas.
import { scimNotFound } from "./errors.ts";
import { MAX_RESULTS } from "./list.ts";
import { MAX_BULK_OPERATIONS } from "./bulk.ts";
import {
  ENTERPRISE_SCHEMA,
  GROUP_SCHEMA,
  LIST_SCHEMA,
  RESOURCE_SCHEMAS,
  USER_SCHEMA,
  type AttributeDef,
} from "./schemas.ts";

type Json = Record<string, unknown>;

/** `maxPayloadSize`: the largest request body the service reads (bytes). */
export function serviceProviderConfig(base: string, maxPayloadSize: number): Json {
  return {
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
    patch: { supported: true },
    bulk: { supported: true, maxOperations: MAX_BULK_OPERATIONS, maxPayloadSize },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: false },
    sort: { supported: true },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: "oauthbearertoken",
        name: "Bearer token",
        description:
          "A SCIM token of the tenant (POST /0.1/scim/tokens), or a Tessera access token (an OAuth client-credentials token included) holding auth.scim.* ACLs",
        specUri: "https://www.rfc-editor.org/rfc/rfc6750",
        primary: true,
      },
    ],
    meta: { resourceType: "ServiceProviderConfig", location: `${base}/ServiceProviderConfig` },
  };
}

const RESOURCE_TYPES: Record<string, { endpoint: string; schema: string; extensions: string[]; description: string }> =
  {
    User: { endpoint: "/Users", schema: USER_SCHEMA, extensions: [ENTERPRISE_SCHEMA], description: "User Account" },
    Group: { endpoint: "/Groups", schema: GROUP_SCHEMA, extensions: [], description: "Group" },
  };

function resourceType(name: string, base: string): Json {
  const t = RESOURCE_TYPES[name]!;
  return {
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
    id: name,
    name,
    endpoint: t.endpoint,
    description: t.description,
    schema: t.schema,
    schemaExtensions: t.extensions.map((schema) => ({ schema, required: false })),
    meta: { resourceType: "ResourceType", location: `${base}/ResourceTypes/${name}` },
  };
}

export function resourceTypes(base: string, id?: string): Json {
  if (id !== undefined) {
    if (!(id in RESOURCE_TYPES)) throw scimNotFound("ResourceType", id);
    return resourceType(id, base);
  }
  const all = Object.keys(RESOURCE_TYPES).map((n) => resourceType(n, base));
  return { schemas: [LIST_SCHEMA], totalResults: all.length, itemsPerPage: all.length, startIndex: 1, Resources: all };
}

function attributeJson(a: AttributeDef): Json {
  return {
    name: a.name,
    type: a.type,
    multiValued: a.multiValued ?? false,
    description: a.description ?? "",
    required: a.required ?? false,
    ...(a.type === "string" || a.type === "reference" ? { caseExact: a.caseExact ?? false } : {}),
    ...(a.canonicalValues ? { canonicalValues: a.canonicalValues } : {}),
    ...(a.referenceTypes ? { referenceTypes: a.referenceTypes } : {}),
    mutability: a.mutability ?? "readWrite",
    returned: a.returned ?? "default",
    uniqueness: a.uniqueness ?? "none",
    ...(a.subAttributes ? { subAttributes: a.subAttributes.map(attributeJson) } : {}),
  };
}

const SCHEMA_NAMES: Record<string, string> = {
  [USER_SCHEMA]: "User",
  [ENTERPRISE_SCHEMA]: "EnterpriseUser",
  [GROUP_SCHEMA]: "Group",
};

function schemaJson(urn: string, attributes: AttributeDef[], base: string): Json {
  return {
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
    id: urn,
    name: SCHEMA_NAMES[urn],
    attributes: attributes.map(attributeJson),
    meta: { resourceType: "Schema", location: `${base}/Schemas/${urn}` },
  };
}

export function schemas(base: string, id?: string): Json {
  const all = Object.values(RESOURCE_SCHEMAS)
    .flat()
    .map((s) => schemaJson(s.urn, s.attributes, base));
  if (id !== undefined) {
    const one = all.find((s) => s.id === id);
    if (!one) throw scimNotFound("Schema", id);
    return one;
  }
  return { schemas: [LIST_SCHEMA], totalResults: all.length, itemsPerPage: all.length, startIndex: 1, Resources: all };
}
