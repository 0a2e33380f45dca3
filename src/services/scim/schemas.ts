// The SCIM schemas Tessera serves (RFC 7643 §4.1 User, §4.2 Group, §4.3 Enterprise User), as
// the /Schemas endpoint describes them and as filters and sorting compare values: an attribute is
// compared case-sensitively only when its schema says `caseExact` (RFC 7644 §3.4.2.2).
export const USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User";
export const GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group";
export const ENTERPRISE_SCHEMA = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
export const LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
export const PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
export const ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error";
export const BULK_REQUEST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:BulkRequest";
export const BULK_RESPONSE_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:BulkResponse";

export interface AttributeDef {
  name: string;
  type: "string" | "boolean" | "complex" | "reference" | "dateTime" | "integer" | "decimal";
  multiValued?: boolean;
  required?: boolean;
  caseExact?: boolean;
  mutability?: "readOnly" | "readWrite" | "immutable" | "writeOnly";
  returned?: "always" | "never" | "default" | "request";
  uniqueness?: "none" | "server" | "global";
  subAttributes?: AttributeDef[];
  referenceTypes?: string[];
  canonicalValues?: string[];
  description?: string;
}

const str = (name: string, more: Partial<AttributeDef> = {}): AttributeDef => ({ name, type: "string", ...more });
const multi = (name: string, subs: AttributeDef[], more: Partial<AttributeDef> = {}): AttributeDef => ({
  name,
  type: "complex",
  multiValued: true,
  subAttributes: subs,
  ...more,
});
const valueTypePrimary = (types: string[]) => [
  str("value"),
  str("display"),
  str("type", { canonicalValues: types }),
  { name: "primary", type: "boolean" } as AttributeDef,
];

const META: AttributeDef = {
  name: "meta",
  type: "complex",
  mutability: "readOnly",
  subAttributes: [
    str("resourceType", { caseExact: true, mutability: "readOnly" }),
    { name: "created", type: "dateTime", mutability: "readOnly" },
    { name: "lastModified", type: "dateTime", mutability: "readOnly" },
    { name: "location", type: "reference", mutability: "readOnly" },
    str("version", { caseExact: true, mutability: "readOnly" }),
  ],
};
const ID = str("id", { caseExact: true, mutability: "readOnly", returned: "always", uniqueness: "server" });
const EXTERNAL_ID = str("externalId", { caseExact: true });

export const USER_ATTRIBUTES: AttributeDef[] = [
  ID,
  EXTERNAL_ID,
  str("userName", { required: true, uniqueness: "server", description: "The login name (PRECIS: case-folded)" }),
  {
    name: "name",
    type: "complex",
    subAttributes: [
      str("formatted"),
      str("familyName"),
      str("givenName"),
      str("middleName"),
      str("honorificPrefix"),
      str("honorificSuffix"),
    ],
  },
  str("displayName"),
  str("nickName"),
  { name: "profileUrl", type: "reference", referenceTypes: ["external"] },
  str("title"),
  str("userType"),
  str("preferredLanguage"),
  str("locale"),
  str("timezone"),
  { name: "active", type: "boolean" },
  str("password", { mutability: "writeOnly", returned: "never" }),
  multi("emails", valueTypePrimary(["work", "home", "other"])),
  multi("phoneNumbers", valueTypePrimary(["work", "home", "mobile", "fax", "pager", "other"])),
  multi("ims", valueTypePrimary([])),
  multi("photos", valueTypePrimary(["photo", "thumbnail"])),
  multi("addresses", [
    str("formatted"),
    str("streetAddress"),
    str("locality"),
    str("region"),
    str("postalCode"),
    str("country"),
    str("type", { canonicalValues: ["work", "home", "other"] }),
    { name: "primary", type: "boolean" },
  ]),
  multi(
    "groups",
    [
      str("value", { caseExact: true, mutability: "readOnly" }),
      { name: "$ref", type: "reference", referenceTypes: ["Group"], mutability: "readOnly" },
      str("display", { mutability: "readOnly" }),
      str("type", { mutability: "readOnly", canonicalValues: ["direct"] }),
    ],
    { mutability: "readOnly" },
  ),
  multi("entitlements", valueTypePrimary([])),
  multi("roles", valueTypePrimary([])),
  multi("x509Certificates", valueTypePrimary([])),
  META,
];

export const ENTERPRISE_ATTRIBUTES: AttributeDef[] = [
  str("employeeNumber"),
  str("costCenter"),
  str("organization"),
  str("division"),
  str("department"),
  {
    name: "manager",
    type: "complex",
    subAttributes: [
      str("value", { caseExact: true }),
      { name: "$ref", type: "reference", referenceTypes: ["User"] },
      str("displayName", { mutability: "readOnly" }),
    ],
  },
];

export const GROUP_ATTRIBUTES: AttributeDef[] = [
  ID,
  EXTERNAL_ID,
  str("displayName", { required: true, uniqueness: "server" }),
  multi("members", [
    str("value", { caseExact: true, mutability: "immutable" }),
    { name: "$ref", type: "reference", referenceTypes: ["User", "Group"], mutability: "immutable" },
    str("display", { mutability: "readOnly" }),
    str("type", { mutability: "immutable", canonicalValues: ["User", "Group"] }),
  ]),
  META,
];

/** The definition of `attr` (and `sub`) in `defs`, names compared case-insensitively; undefined if unknown. */
export function findAttribute(defs: AttributeDef[], attr: string, sub?: string | null): AttributeDef | undefined {
  const top = defs.find((d) => d.name.toLowerCase() === attr.toLowerCase());
  if (!sub || !top) return top;
  return top.subAttributes?.find((d) => d.name.toLowerCase() === sub.toLowerCase());
}

/** The schemas a resource type answers, each with its attributes: the core one first. */
export const RESOURCE_SCHEMAS: Record<"User" | "Group", Array<{ urn: string; attributes: AttributeDef[] }>> = {
  User: [
    { urn: USER_SCHEMA, attributes: USER_ATTRIBUTES },
    { urn: ENTERPRISE_SCHEMA, attributes: ENTERPRISE_ATTRIBUTES },
  ],
  Group: [{ urn: GROUP_SCHEMA, attributes: GROUP_ATTRIBUTES }],
};

/**
 * Whether a path compares case-sensitively: its schema's `caseExact`, else false (RFC 7643
 * §2.3.1: the default). `schema` null = the resource's core schema, or the extension whose
 * attributes the path names (the caller resolves extension objects before asking).
 */
export function caseExact(kind: "User" | "Group", schema: string | null, attr: string, sub: string | null): boolean {
  const schemas = RESOURCE_SCHEMAS[kind];
  const where = schema ? schemas.filter((s) => s.urn.toLowerCase() === schema.toLowerCase()) : schemas;
  for (const s of where) {
    const def = findAttribute(s.attributes, attr, sub);
    if (def) return def.caseExact === true;
  }
  return false;
}
