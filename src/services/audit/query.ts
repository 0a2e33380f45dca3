// GET /0.1/audit: the entries of the caller's scoping tenant (and its subtree with `recurse`),
// newest first by default, filtered by actor, target, action (exact, or a prefix ending in `*`),
// outcome and time range. Every filter is answered by an index (migration audit) whose order is
// the page's order, so a page reads about `limit` index entries whatever the table's size.
// `after` continues from an entry (keyset: no `offset` walk over millions of rows).
import { and, eq, gt, lt, or, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { auditChains, auditEntries } from "../../db/schema.ts";
import type { Caller } from "../../domain/caller.ts";
import type { ListParams } from "../../domain/collection.ts";
import { searchPattern } from "../../domain/collection.ts";
import { inCallerScope } from "../identity/visibility.ts";
import { inSubtree } from "../identity/tenant-tree.ts";
import { InvalidData } from "../../domain/errors.ts";
import { isUuid } from "../../domain/validate.ts";
import { parseDateTime } from "../../domain/datetime.ts";
import type { AuditItem } from "./item.ts";

export type AuditFilter =
  | "actor_uuid"
  | "target_uuid"
  | "target_kind"
  | "action"
  | "outcome"
  | "since"
  | "until"
  | "after";

export interface AuditPage {
  items: AuditItem[];
  total: number;
  filtered: number;
  /** True when `filtered` stopped counting at `FILTERED_COUNT_CAP` (the matches are at least that many). */
  filtered_capped?: boolean;
}

/** Counting every match of a broad filter over millions of rows costs seconds: counted up to this. */
export const FILTERED_COUNT_CAP = 10_000;

type Row = typeof auditEntries.$inferSelect;

/**
 * An entry as the caller may see it: the actor's session, address and user agent only when the actor
 * is nobody's (an anonymous login attempt, the system) or acted from a tenant the caller administers;
 * an ancestor tenant's administrator is shown by their uuid alone.
 */
export function auditItem(r: Row, actorOriginVisible: boolean): AuditItem {
  return {
    uuid: r.uuid,
    time: r.time.toISOString(),
    actor: {
      user_uuid: r.actorUserUuid,
      session_uuid: actorOriginVisible ? r.actorSessionUuid : null,
      tenant_uuid: r.actorTenantUuid,
      address: actorOriginVisible ? r.actorAddress : null,
      user_agent: actorOriginVisible ? r.actorUserAgent : null,
    },
    action: r.action,
    target: { kind: r.targetKind, uuid: r.targetUuid, tenant_uuid: r.targetTenantUuid },
    outcome: r.outcome,
    changes: r.changes as AuditItem["changes"],
  };
}

/** Validated filters (the route's schema checks formats; these are the SQL conditions). */
export interface AuditQuery {
  actorUuid?: string;
  targetUuid?: string;
  targetKind?: string;
  action?: string;
  outcome?: string;
  since?: Date;
  until?: Date;
  /** Keyset: entries after this one in the page's order. */
  after?: string;
  /** Oldest first (`direction=asc`); newest first by default. */
  ascending?: boolean;
}

/** The filters of a query string, checked: a malformed uuid is a 400 naming the parameter (a time: the route's schema). */
export function parseAuditFilters(f: Partial<Record<AuditFilter, string>>, direction: string | undefined): AuditQuery {
  const details: Record<string, unknown> = {};
  const uuid = (name: AuditFilter) => {
    const v = f[name];
    if (v !== undefined && !isUuid(v))
      details[name] = { constraint_id: "uuid", constraint: "uuid", message: `"${name}" must be a UUID` };
    return v;
  };
  // The route's schema refused a time that datetime.ts's rule does not accept (a 400 naming it).
  const time = (name: AuditFilter) => {
    const v = f[name];
    return v === undefined ? undefined : (parseDateTime(v) ?? undefined);
  };
  const q: AuditQuery = {
    actorUuid: uuid("actor_uuid"),
    targetUuid: f.target_uuid,
    targetKind: f.target_kind,
    action: f.action,
    outcome: f.outcome,
    since: time("since"),
    until: time("until"),
    after: uuid("after"),
    ascending: direction === "asc",
  };
  if (f.action?.slice(0, -1).includes("*"))
    details.action = { constraint_id: "pattern", constraint: "name or prefix*", message: '"*" may only end "action"' };
  if (Object.keys(details).length) throw new InvalidData("audit", details);
  return q;
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * "The actor's origin is the caller's to see": no actor tenant (anonymous, system), or one in the
 * subtree of the caller's own tenant (not the scoping one: a master administrator scoping a
 * sub-tenant still sees everything).
 */
function actorOriginVisible(app: AppContext, caller: Caller): SQL {
  const e = auditEntries;
  if (!caller.ownTenantUuid) return sql`${e.actorTenantUuid} is null`;
  return sql`(${e.actorTenantUuid} is null or ${inSubtree(e.actorTenantUuid, caller.ownTenantUuid, app.topTenantUuid)})`;
}

function filterConditions(q: AuditQuery, search: string | undefined, originVisible: SQL): SQL[] {
  const c: SQL[] = [];
  const e = auditEntries;
  if (q.actorUuid) c.push(eq(e.actorUserUuid, q.actorUuid));
  if (q.targetUuid) c.push(eq(e.targetUuid, q.targetUuid));
  if (q.targetKind) c.push(eq(e.targetKind, q.targetKind));
  if (q.action?.endsWith("*")) {
    const prefix = q.action.slice(0, -1);
    // The index on `action COLLATE "C"` answers a prefix as a range.
    if (prefix) c.push(sql`(${e.action} collate "C") like ${`${escapeLike(prefix)}%`}`);
  } else if (q.action) c.push(eq(e.action, q.action));
  if (q.outcome) c.push(eq(e.outcome, q.outcome));
  if (q.since) c.push(sql`${e.time} >= ${q.since.toISOString()}::timestamptz`);
  if (q.until) c.push(sql`${e.time} < ${q.until.toISOString()}::timestamptz`);
  const pattern = searchPattern(search);
  if (pattern && pattern !== "%")
    c.push(
      or(
        sql`${e.action} ilike ${pattern}`,
        sql`${e.targetKind} ilike ${pattern}`,
        // An address the caller may not see is not searchable either (searching would reveal it).
        and(originVisible, sql`${e.actorAddress} ilike ${pattern}`),
        sql`${e.changes}::text ilike ${pattern}`,
        sql`${e.actorUserUuid} ilike ${pattern}`,
        sql`${e.targetUuid} ilike ${pattern}`,
      )!,
    );
  return c;
}

/**
 * A page's order, newest (or oldest) first. The indexes are `time DESC NULLS LAST, id DESC NULLS
 * LAST` (what drizzle writes), and PostgreSQL matches an ORDER BY to an index nulls placement
 * included, NOT NULL columns or not: a plain `time DESC` (nulls first) made every page sort all the
 * scope's matching rows (a tenant's 10,000 entries: 25 ms; the master's own, growing with the
 * trail) instead of reading the first 50 from an index (tests/api/audit.test.ts checks the plans).
 */
export function pageOrder(ascending: boolean): SQL[] {
  const e = auditEntries;
  return ascending
    ? [sql`${e.time} asc nulls first`, sql`${e.id} asc nulls first`]
    : [sql`${e.time} desc nulls last`, sql`${e.id} desc nulls last`];
}

export async function listAudit(
  app: AppContext,
  caller: Caller,
  params: ListParams,
  q: AuditQuery,
): Promise<AuditPage> {
  const e = auditEntries;
  const scope = inCallerScope(app, caller, params.recurse, e.tenantUuid);
  const originVisible = actorOriginVisible(app, caller);
  const filters = filterConditions(q, params.search, originVisible);
  const ascending = q.ascending === true;
  const keyset: SQL[] = [];
  if (q.after) {
    // An entry outside the caller's scope is no anchor: its time is not theirs to learn.
    const [anchor] = await app.db
      .select({ time: e.time, id: e.id })
      .from(e)
      .where(and(eq(e.uuid, q.after), scope));
    if (!anchor) return { items: [], total: await totalOf(app, caller, params.recurse), filtered: 0 };
    const t = sql`${anchor.time.toISOString()}::timestamptz`;
    keyset.push(
      ascending
        ? or(gt(e.time, t as never), and(eq(e.time, t as never), gt(e.id, anchor.id)))!
        : or(lt(e.time, t as never), and(eq(e.time, t as never), lt(e.id, anchor.id)))!,
    );
  }
  const order = pageOrder(ascending);
  const limit = params.limit ?? 100;
  const rows = await app.db
    .select({ entry: e, originVisible: sql<boolean>`${originVisible}` })
    .from(e)
    .where(and(scope, ...filters, ...keyset))
    .orderBy(...order)
    .limit(limit)
    .offset(q.after ? 0 : params.offset);
  const total = await totalOf(app, caller, params.recurse);
  let filtered = total;
  let capped = false;
  if (filters.length) {
    const [row] = await app.db.select({ n: sql<number>`count(*)::int` }).from(
      sql`(${app.db
        .select({ one: sql`1` })
        .from(e)
        .where(and(scope, ...filters))
        .limit(FILTERED_COUNT_CAP + 1)}) m`,
    );
    filtered = Math.min(row?.n ?? 0, FILTERED_COUNT_CAP);
    capped = (row?.n ?? 0) > FILTERED_COUNT_CAP;
  }
  const page: AuditPage = {
    items: rows.map((r) => auditItem(r.entry, r.originVisible === true)),
    total,
    filtered,
  };
  if (capped) page.filtered_capped = true;
  return page;
}

/**
 * Every entry the caller may see: the chains' lengths since their anchors (kept by the trigger
 * and retention), summed over the scoped tenants — not a count of millions of rows.
 */
async function totalOf(app: AppContext, caller: Caller, recurse: boolean): Promise<number> {
  const c = auditChains;
  const [row] = await app.db
    .select({ n: sql<number>`coalesce(sum(${c.seq} - ${c.anchorSeq}), 0)::bigint` })
    .from(c)
    .where(inCallerScope(app, caller, recurse, c.tenantUuid));
  return Number(row?.n ?? 0);
}
