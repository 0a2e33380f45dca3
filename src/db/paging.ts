// One page of a list with its two counts (wazo-auth's list parameters): `total` under the base scope,
// `filtered` after search and filters; both ignore limit and offset. One round trip per page: the
// counts ride along with the rows (`total` as a scalar subquery, `filtered` as a count of the
// gathered matches, or the same as `total` when nothing narrows the base). Only an empty page (nothing matches, or an
// offset past the end) costs a second query for the counts.
import { getTableColumns, getTableName, sql, type SQL } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import { execRows, type DbOrTx } from "./index.ts";

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
  const countColumns = (t: SQL, f: SQL) => ({
    total: sql<number>`${t}`.mapWith(Number).as("tessera_page_total"),
    filtered: sql<number>`${f}`.mapWith(Number).as("tessera_page_filtered"),
  });
  let query;
  if (!narrowed) {
    // The whole base: `filtered` is `total`, and the planner walks an index in the page's order.
    query = db
      .select({ row: from, ...countColumns(total, sql`0`) } as never)
      .from(from)
      .where(where)
      .orderBy(...orderBy)
      .offset(params.offset)
      .$dynamic();
  } else {
    // Every match must be counted, so the matches are gathered first, planned without the page's
    // order and limit (a search then combines its trigram indexes in one bitmap, where an ordered
    // index walk would test every row of the tenant). The gathered rows take the table's name, so
    // the order applies to them unchanged; the total is computed before that name is shadowed.
    const name = getTableName(from);
    const totalCte = db.$with("tessera_total", { n: sql<number>`n` }).as(sql`select ${total} as n`);
    const matches = db.$with(name, {}).as(sql`select * from ${from} where ${where}`);
    const selection = {
      row: from,
      ...countColumns(sql`(select n from tessera_total)`, sql`(select count(*)::int from ${sql.identifier(name)})`),
    };
    query = db
      .with(totalCte, matches)
      .select(selection as never)
      .from(from)
      .orderBy(...orderBy)
      .offset(params.offset)
      .$dynamic();
  }
  if (params.limit !== undefined) query = query.limit(params.limit);
  type Fetched = { row: T["$inferSelect"]; total: number; filtered: number } & Record<string, unknown>;
  const rows = opts.fields
    ? await withFields(db, from, query.getSQL(), orderBy, opts.fields)
    : ((await query) as unknown as Fetched[]);
  const first = rows[0];
  if (first) {
    const extraKeys = Object.keys(opts.fields ?? {});
    const withExtras = rows.map((r) => {
      const out = { ...r.row } as Record<string, unknown>;
      for (const k of extraKeys) out[k] = r[k];
      return out as T["$inferSelect"] & Extra;
    });
    return { rows: withExtras, total: first.total, filtered: narrowed ? first.filtered : first.total };
  }
  const [counts] = await db
    .select({ total: sql<number>`${total}`.mapWith(Number), filtered: sql<number>`${countOf(where)}`.mapWith(Number) })
    .from(sql`(select 1) as one`);
  return { rows: [], total: counts?.total ?? 0, filtered: counts?.filtered ?? 0 };
}

/**
 * The page's rows with the extra fields computed around it, for the rows of the page only:
 * PostgreSQL evaluates a select list below the limit, so fields in the page query itself would be
 * computed for every row the offset skips too (an emails aggregate for 500 users to show 10).
 */
async function withFields(db: DbOrTx, from: PgTable, page: SQL, orderBy: SQL[], fields: Record<string, SQL>) {
  const name = sql.identifier(getTableName(from));
  const extras = sql.join(
    Object.entries(fields).map(([key, field]) => sql`${field} as ${sql.identifier(key)}`),
    sql`, `,
  );
  const raw = await execRows<Record<string, unknown>>(
    db,
    sql`select ${extras}, ${name}.* from (${page}) as ${name} order by ${sql.join(orderBy, sql`, `)}`,
  );
  const columns = Object.entries(getTableColumns(from));
  return raw.map((r) => {
    const row: Record<string, unknown> = {};
    for (const [key, column] of columns) {
      const value = r[column.name];
      row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
    }
    const out: Record<string, unknown> = {
      row,
      total: Number(r.tessera_page_total),
      filtered: Number(r.tessera_page_filtered),
    };
    for (const key of Object.keys(fields)) out[key] = r[key];
    return out as { row: never; total: number; filtered: number } & Record<string, unknown>;
  });
}
