// Several inserts as one statement, its text built once and its values bound on every call.
//
// A token's issue is one statement — its session, the session's event, the token, and whatever the
// caller adds (the audit entry and its bus copy, an access token's record): one round trip, atomic
// on its own. drizzle builds a statement's text anew on every call (each insert's builder, then the
// chunks merged into text and parameters); for the client credentials grant on PGlite that building
// was 28 % of the main thread's busy time (docs/benchmarks.md). Here drizzle builds the text once per
// shape — which tables, which columns given — from the same insert builders with a placeholder in
// place of each value, and each call binds its rows' values to it: each value still goes through its
// column's encoder as drizzle's own path does (null stays SQL NULL), and the text is sent as it is.
// On PostgreSQL the statement is also prepared once per connection (postgres.js keeps it by its
// text), so the server neither parses nor plans it again.
import { type Column, getTableColumns, is, SQL, sql } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import type { DbOrTx } from "./index.ts";

/** One row for one table, as `insert(table).values(row)` takes it (undefined values: the column's default). */
export interface RowInsert {
  table: PgTable;
  row: Record<string, unknown>;
}

interface Query {
  sql: string;
  params: unknown[];
}

/** What of drizzle's database object this uses: its dialect (SQL → text) and session (runs prepared text). */
interface DrizzleInternals {
  dialect: { sqlToQuery(sql: SQL): Query };
  session: {
    prepareQuery(
      query: Query,
      fields: undefined,
      name: string | undefined,
      arrayMode: boolean,
    ): { execute(values?: Record<string, unknown>): Promise<unknown> };
  };
}

/** Statement texts by shape. Shapes are few (each caller has one or two); bounded all the same. */
const built = new Map<string, Query>();
const MAX_SHAPES = 256;

/**
 * Runs `inserts` as one statement, `with i0 as (insert …), i1 as (insert …) insert …` (the last one
 * outside the CTEs). PostgreSQL checks deferred-free foreign keys between them at the end of the
 * statement, so a row may reference one inserted by a sibling (a token its session).
 */
export async function runInserts(db: DbOrTx, inserts: RowInsert[]): Promise<void> {
  const { dialect, session } = db as unknown as DrizzleInternals;
  const values: Record<string, unknown> = {};
  let shape = "";
  let literal = false;
  for (const [i, { table, row }] of inserts.entries()) {
    shape += `${i ? ";" : ""}${tableName(table)}:`;
    const columns = getTableColumns(table) as Record<string, Column | undefined>;
    for (const key in row) {
      const value = row[key];
      if (value === undefined) continue; // the column's default, as drizzle's values() does
      shape += `${key},`;
      if (is(value, SQL))
        literal = true; // an expression, not a value: drizzle's own path
      // Encoded as drizzle encodes a value (null stays SQL NULL, never the encoder's "null").
      else values[`${i}.${key}`] = value === null || !columns[key] ? value : columns[key].mapToDriverValue(value);
    }
  }
  let query = literal ? undefined : built.get(shape);
  if (!query) {
    const text = literal ? null : statementOf(db, inserts);
    if (!text) {
      // An SQL expression among the values, or a column computed per row by drizzle ($defaultFn):
      // built each time, as drizzle does.
      await (db as unknown as { execute(q: SQL): Promise<unknown> }).execute(literalStatement(db, inserts));
      return;
    }
    query = dialect.sqlToQuery(text);
    if (built.size >= MAX_SHAPES) built.clear();
    built.set(shape, query);
  }
  // Named: postgres.js prepares it once per connection. PGlite runs the text with its parameters.
  await session.prepareQuery(query, undefined, "bound_inserts", false).execute(values);
}

/** A number per table object (two schemas may hold tables of the same name). */
const tableIds = new WeakMap<PgTable, number>();
let nextTableId = 0;
function tableName(table: PgTable): number {
  let id = tableIds.get(table);
  if (id === undefined) tableIds.set(table, (id = nextTableId++));
  return id;
}

type Inserter = { insert(t: PgTable): { values(row: Record<string, unknown>): { getSQL(): SQL } } };

/** The statement with a placeholder per given value; null if a table computes an omitted column in JavaScript. */
function statementOf(db: DbOrTx, inserts: RowInsert[]): SQL | null {
  const parts: SQL[] = [];
  for (const [i, { table, row }] of inserts.entries()) {
    const placeholders: Record<string, unknown> = {};
    // Wrapped in SQL so that drizzle binds the placeholder as it is: the values come encoded.
    for (const key in row) if (row[key] !== undefined) placeholders[key] = sql`${sql.placeholder(`${i}.${key}`)}`;
    for (const [key, column] of Object.entries(getTableColumns(table))) {
      const computed = (column as { defaultFn?: unknown; onUpdateFn?: unknown }).defaultFn;
      if (!(key in placeholders) && computed) return null;
    }
    parts.push((db as unknown as Inserter).insert(table).values(placeholders).getSQL());
  }
  return joinInserts(parts);
}

/** The same statement with the values written in (drizzle's usual path). */
function literalStatement(db: DbOrTx, inserts: RowInsert[]): SQL {
  return joinInserts(inserts.map(({ table, row }) => (db as unknown as Inserter).insert(table).values(row).getSQL()));
}

function joinInserts(parts: SQL[]): SQL {
  const last = parts.at(-1)!;
  const ctes = parts.slice(0, -1).map((part, i) => sql`${sql.raw(`i${i}`)} as (${part})`);
  return ctes.length ? sql`with ${sql.join(ctes, sql`, `)} ${last}` : last;
}

/** How many statement shapes are kept (tests). */
export const boundShapes = () => built.size;
