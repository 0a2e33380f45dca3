// A SCIM query (RFC 7644 §3.4.2): filter, sortBy/sortOrder, 1-based startIndex and count, and the
// ListResponse (§3.4.2.4) that answers it. `count` is capped at MAX_RESULTS (announced in
// ServiceProviderConfig as `filter.maxResults`); a negative count is 0, a startIndex below 1 is 1.
import { invalidValue } from "./errors.ts";
import { parseAttrPath, parseFilter, type AttrPath, type Filter } from "./filter-parse.ts";
import { keyOf, valuesAt, type ResourceKind } from "./filter-match.ts";
import { LIST_SCHEMA, caseExact } from "./schemas.ts";
import { attributeList } from "./projection.ts";

export const MAX_RESULTS = 1000;

type Json = Record<string, unknown>;

export interface ScimQuery {
  filter: Filter | null;
  sortBy: AttrPath | null;
  descending: boolean;
  startIndex: number;
  count: number;
  attributes: AttrPath[] | null;
  excluded: AttrPath[] | null;
}

const intOf = (v: string | undefined, name: string, fallback: number): number => {
  if (v === undefined || v.trim() === "") return fallback;
  if (!/^-?\d{1,15}$/.test(v.trim())) throw invalidValue(`${name} must be an integer`);
  return Number(v.trim());
};

/** Reads the query parameters (their names compared case-insensitively: clients differ). */
export function scimQueryOf(raw: Record<string, string | string[] | undefined>): ScimQuery {
  const get = (name: string) => {
    const k = keyOf(raw as Json, name);
    const v = k === undefined ? undefined : raw[k];
    return Array.isArray(v) ? v[v.length - 1] : v;
  };
  const filterText = get("filter");
  const sortBy = get("sortBy");
  const order = get("sortOrder")?.toLowerCase();
  if (order !== undefined && order !== "" && order !== "ascending" && order !== "descending")
    throw invalidValue("sortOrder must be ascending or descending");
  return {
    filter: filterText !== undefined && filterText.trim() !== "" ? parseFilter(filterText) : null,
    sortBy: sortBy ? parseAttrPath(sortBy.trim(), invalidValue) : null,
    descending: order === "descending",
    startIndex: Math.max(1, intOf(get("startIndex"), "startIndex", 1)),
    count: Math.min(MAX_RESULTS, Math.max(0, intOf(get("count"), "count", 100))),
    attributes: attributeList(get("attributes")),
    excluded: attributeList(get("excludedAttributes")),
  };
}

export function listResponse(resources: Json[], total: number, startIndex: number): Json {
  return {
    schemas: [LIST_SCHEMA],
    totalResults: total,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}

/** Sorts resources in memory by `sortBy` (absent values last, RFC 7644 §3.4.2.3), case as the schema says. */
export function sortResources(list: Json[], q: ScimQuery, kind: ResourceKind): Json[] {
  if (!q.sortBy) return list;
  const path = q.sortBy;
  const exact = caseExact(kind, path.schema, path.attr, path.sub);
  const keyFor = (r: Json) => {
    const v = valuesAt(r, path)[0];
    if (v === undefined) return null;
    return typeof v === "string" && !exact ? v.toLowerCase() : (v as string | number | boolean);
  };
  const keyed = list.map((r) => ({ r, k: keyFor(r) }));
  keyed.sort((a, b) => {
    if (a.k === null || b.k === null) return a.k === b.k ? 0 : a.k === null ? 1 : -1;
    const c = a.k < b.k ? -1 : a.k > b.k ? 1 : 0;
    return q.descending ? -c : c;
  });
  return keyed.map((x) => x.r);
}
