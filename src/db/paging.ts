// One page of a list with its two counts (COMPATIBILITY.md §7.1): `total` under the base scope,
// `filtered` after search and filters; both ignore limit and offset. One round trip per page: the
// counts ride along with the rows (`total` as a scalar subquery, `filtered` as a count of the
// gathered matches, or the same as `total` when nothing narrows the base). Only an empty page (nothing matches, or an
// offset past the end) costs a second query for the counts.
import { getTableName, sql, type SQL } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import type { DbOrTx } from "./index.ts";

export interface Page<Row, Extra = Record<string, never>> {
  rows: Array<Row & Extra>;
  filtered: number;
  total: number;
}

export interface PageOptions<Extra> {
  /** The total as a cheaper scalar expression than counting the base (a maintained counter). */
  total?: SQL<number>;
  /** More columns computed per row in the same query (e.g. a JSON aggregate of child rows). */
  fields?: { [K in keyof Extra]: SQL<Extra[K]> };
}

/**
 * `where` must be `base` itself (the same object) when no search or filter applies: `filtered`
 * is then `total` and no window count is needed.
 */
export async function listPage<T extends PgTable, Extra extends Record<string, unknown> = Record<string, never>>(
  db: DbOrTx,
  table: T,
  base: SQL | undefined,
  where: SQL | undefined,
  orderBy: SQL[],
  params: { limit: number | undefined; offset: number },
  opts: PageOptions<Extra> = {},
): Promise<Page<T["$inferSelect"], Extra>> {
  const from = table as unknown as PgTable;
  const narrowed = where !== base;
  const countOf = (w: SQL | undefined) => sql<number>`(select count(*)::int from ${from} where ${w ?? sql`true`})`;
  const total = opts.total ?? countOf(base);
  const extraKeys = Object.keys(opts.fields ?? {});
  let query;
  if (!narrowed) {
    // The whole base: `filtered` is `total`, and the planner walks an index in the page's order.
    const selection = { ...(opts.fields ?? {}), row: from, total: sql<number>`${total}`.mapWith(Number), filtered: sql<number>`0`.mapWith(Number) };
    query = db.select(selection as never).from(from).where(where).orderBy(...orderBy).offset(params.offset).$dynamic();
  } else {
    // Every match must be counted, so the matches are gathered first, planned without the page's
    // order and limit (a search then combines its trigram indexes in one bitmap, where an ordered
    // index walk would test every row of the tenant). The gathered rows take the table's name, so
    // the order and the extra fields apply to them unchanged; the total is computed before that
    // name is shadowed.
    const name = getTableName(from);
    const totalCte = db.$with("tessera_total", { n: sql<number>`n` }).as(sql`select ${total} as n`);
    const matches = db.$with(name, {}).as(sql`select * from ${from} where ${where}`);
    const selection = {
      ...(opts.fields ?? {}),
      row: from,
      total: sql<number>`(select n from tessera_total)`.mapWith(Number),
      filtered: sql<number>`(select count(*)::int from ${sql.identifier(name)})`.mapWith(Number),
    };
    query = db.with(totalCte, matches).select(selection as never).from(from).orderBy(...orderBy).offset(params.offset).$dynamic();
  }
  if (params.limit !== undefined) query = query.limit(params.limit);
  const rows = (await query) as unknown as Array<{ row: T["$inferSelect"]; total: number; filtered: number } & Record<string, unknown>>;
  const first = rows[0];
  if (first) {
    const withExtras = rows.map((r) => {
      const out = { ...r.row } as Record<string, unknown>;
      for (const k of extraKeys) out[k] = r[k];
      return out as T["$inferSelect"] & Extra;
    });
    return { rows: withExtras, total: first.total, filtered: narrowed ? first.filtered : first.total };
  }
  const [counts] = await db.select({ total: sql<number>`${total}`.mapWith(Number), filtered: sql<number>`${countOf(where)}`.mapWith(Number) }).from(sql`(select 1) as one`);
  return { rows: [], total: counts?.total ?? 0, filtered: counts?.filtered ?? 0 };
}
