// One page of a list with its two counts (COMPATIBILITY.md §7.1): `total` under the base scope,
// `filtered` after search and filters; both ignore limit and offset. Done in SQL.
import { sql, type SQL } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import type { DbOrTx } from "./index.ts";

export interface Page<Row> {
  rows: Row[];
  filtered: number;
  total: number;
}

export async function listPage<T extends PgTable>(
  db: DbOrTx,
  table: T,
  base: SQL | undefined,
  where: SQL | undefined,
  orderBy: SQL[],
  params: { limit: number | undefined; offset: number },
): Promise<Page<T["$inferSelect"]>> {
  const from = table as unknown as PgTable;
  let query = db.select().from(from).where(where).orderBy(...orderBy).offset(params.offset).$dynamic();
  if (params.limit !== undefined) query = query.limit(params.limit);
  const count = (w: SQL | undefined) => db.select({ n: sql<number>`count(*)::int` }).from(from).where(w);
  const [rows, [total], [filtered]] = await Promise.all([query, count(base), count(where)]);
  return { rows: rows as T["$inferSelect"][], filtered: filtered?.n ?? 0, total: total?.n ?? 0 };
}
