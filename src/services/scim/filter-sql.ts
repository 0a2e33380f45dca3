// A parsed SCIM filter as a SQL condition, for the attributes stored in columns, so a filtered list
// (`userName eq "…"`, Okta's and Entra's existence check) is an index lookup at any tenant size.
// What has no column (the Enterprise extension, other kept attributes, value filters) compiles to
// nothing: the condition is then a superset (`exact: false`) and the list evaluates the whole
// filter in memory on the rows it returns (filter-match.ts), with the same meaning.
import { sql, type SQL } from "drizzle-orm";
import type { AttrPath, Filter, Value } from "./filter-parse.ts";
import type { ResourceKind } from "./filter-match.ts";

export interface Compiled {
  sql: SQL;
  /** True when the condition is the filter itself; false when it only narrows (the rest is checked in memory). */
  exact: boolean;
}

interface Target {
  /** The value's SQL expression (inside `within` for a multi-valued attribute). */
  col: SQL;
  type: "string" | "boolean";
  caseExact: boolean;
  /** A multi-valued attribute: wraps a condition on `col` as "some value satisfies it". */
  within?: (cond: SQL) => SQL;
  /** `eq` as an index lookup of its own (a scalar sub-select per row would scan the tenant). */
  eq?: (value: string) => SQL;
}

const isCore = (schema: string | null) => schema === null || /:core:2\.0:(User|Group)$/i.test(schema);

function userTarget(path: AttrPath): Target | null {
  if (!isCore(path.schema)) return null;
  const attr = path.attr.toLowerCase();
  const sub = path.sub?.toLowerCase() ?? null;
  if (attr === "id" && !sub) return { col: sql`u.uuid`, type: "string", caseExact: true };
  if (attr === "username" && !sub) return { col: sql`u.username`, type: "string", caseExact: false };
  if (attr === "active" && !sub) return { col: sql`u.enabled`, type: "boolean", caseExact: true };
  if (attr === "name" && sub === "givenname") return { col: sql`u.firstname`, type: "string", caseExact: false };
  if (attr === "name" && sub === "familyname") return { col: sql`u.lastname`, type: "string", caseExact: false };
  if (attr === "externalid" && !sub)
    return {
      col: sql`(select s.external_id from tessera_scim_user s where s.user_uuid = u.uuid)`,
      type: "string",
      caseExact: true,
      eq: (v) => sql`u.uuid in (select s.user_uuid from tessera_scim_user s where s.external_id = ${v})`,
    };
  if (attr === "emails" && (sub === null || sub === "value"))
    return {
      col: sql`e.address`,
      type: "string",
      caseExact: false,
      within: (cond) => sql`exists (select 1 from auth_email e where e.user_uuid = u.uuid and ${cond})`,
    };
  return null;
}

function groupTarget(path: AttrPath): Target | null {
  if (!isCore(path.schema)) return null;
  const attr = path.attr.toLowerCase();
  const sub = path.sub?.toLowerCase() ?? null;
  if (attr === "id" && !sub) return { col: sql`g.uuid`, type: "string", caseExact: true };
  if (attr === "displayname" && !sub) return { col: sql`g.name`, type: "string", caseExact: false };
  if (attr === "externalid" && !sub)
    return {
      col: sql`(select s.external_id from tessera_scim_group s where s.group_uuid = g.uuid)`,
      type: "string",
      caseExact: true,
      eq: (v) => sql`g.uuid in (select s.group_uuid from tessera_scim_group s where s.external_id = ${v})`,
    };
  if (attr === "members" && (sub === null || sub === "value"))
    return {
      col: sql`m.user_uuid`,
      type: "string",
      caseExact: true,
      within: (cond) => sql`exists (select 1 from auth_user_group m where m.group_uuid = g.uuid and ${cond})`,
    };
  return null;
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** The comparison on one value, or null when its meaning needs the in-memory evaluation. */
function comparison(t: Target, op: string, raw: Value): SQL | null {
  if (t.type === "boolean") {
    const v =
      typeof raw === "boolean"
        ? raw
        : typeof raw === "string" && /^(true|false)$/i.test(raw)
          ? /^true$/i.test(raw)
          : null;
    if (v === null || op !== "eq") return null;
    return sql`${t.col} = ${v}`;
  }
  if (typeof raw !== "string") return null;
  const col = t.caseExact ? t.col : sql`lower(${t.col})`;
  const v = t.caseExact ? raw : raw.toLowerCase();
  switch (op) {
    case "eq":
      return sql`${col} = ${v}`;
    case "co":
      return sql`${col} like ${`%${escapeLike(v)}%`}`;
    case "sw":
      return sql`${col} like ${`${escapeLike(v)}%`}`;
    case "ew":
      return sql`${col} like ${`%${escapeLike(v)}`}`;
    // Ordering as text in code-point order, as the in-memory evaluation compares.
    case "gt":
      return sql`${col} collate "C" > ${v}`;
    case "ge":
      return sql`${col} collate "C" >= ${v}`;
    case "lt":
      return sql`${col} collate "C" < ${v}`;
    case "le":
      return sql`${col} collate "C" <= ${v}`;
  }
  return null;
}

function leaf(t: Target, f: Filter): SQL | null {
  if (f.op === "pr") {
    const cond = t.type === "boolean" ? sql`${t.col} is not null` : sql`coalesce(${t.col}, '') <> ''`;
    return t.within ? t.within(cond) : cond;
  }
  if (f.op === "and" || f.op === "or" || f.op === "not" || f.op === "has") return null;
  if (f.op === "ne") {
    const eq = leaf(t, { ...f, op: "eq" });
    return eq && sql`not coalesce(${eq}, false)`;
  }
  const { op, value } = f as Extract<Filter, { value: unknown }>;
  if (value === null) return null;
  if (op === "eq" && t.eq && typeof value === "string") return t.eq(value);
  const cond = comparison(t, op, value);
  if (!cond) return null;
  return t.within ? t.within(cond) : cond;
}

/**
 * `filter` as a condition on `u` (auth_user, Users) or `g` (auth_group, Groups); null when
 * nothing of it has a column (every row is a candidate).
 */
export function filterSql(filter: Filter, kind: ResourceKind): Compiled | null {
  return compile(filter, kind === "User" ? userTarget : groupTarget);
}

function compile(filter: Filter, target: (p: AttrPath) => Target | null): Compiled | null {
  const walk = (f: Filter): Compiled | null => {
    switch (f.op) {
      case "and": {
        const l = walk(f.left);
        const r = walk(f.right);
        if (l && r) return { sql: sql`(${l.sql} and ${r.sql})`, exact: l.exact && r.exact };
        const one = l ?? r;
        return one && { sql: one.sql, exact: false };
      }
      case "or": {
        const l = walk(f.left);
        const r = walk(f.right);
        if (!l || !r) return null;
        return { sql: sql`(${l.sql} or ${r.sql})`, exact: l.exact && r.exact };
      }
      case "not": {
        const inner = walk(f.filter);
        if (!inner?.exact) return null;
        return { sql: sql`not coalesce(${inner.sql}, false)`, exact: true };
      }
      case "has": {
        // `emails[type eq "work" and value eq "…"]`: its conditions on `value` narrow the rows
        // (an index lookup), the rest is checked in memory.
        const outer = f.path;
        if (negates(f.filter)) return null; // "some value is not x" is no condition on the rows' values
        const inner = compile(f.filter, (p) =>
          p.attr.toLowerCase() === "value" && p.sub === null ? target({ ...outer, sub: "value" }) : null,
        );
        return inner && { sql: inner.sql, exact: false };
      }
      default: {
        const t = target(f.path);
        const cond = t && leaf(t, f);
        return cond && { sql: cond, exact: true };
      }
    }
  };
  return walk(filter);
}

const negates = (f: Filter): boolean =>
  f.op === "not" || f.op === "ne" || ((f.op === "and" || f.op === "or") && (negates(f.left) || negates(f.right)));
