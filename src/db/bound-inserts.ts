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
import { databaseFailure } from "./failures.ts";
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

/** A set of rows encoded: its shape (which tables, which columns given) and its values in that order. */
interface Encoded {
  shape: string;
  /** An SQL expression among the values: drizzle's own path, built each time. */
  literal: boolean;
  values: unknown[];
}

function encode(inserts: RowInsert[]): Encoded {
  let shape = "";
  let literal = false;
  const values: unknown[] = [];
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
      else values.push(value === null || !columns[key] ? value : columns[key].mapToDriverValue(value));
    }
  }
  return { shape, literal, values };
}

/**
 * Runs `inserts` as one statement, `with i0 as (insert …), i1 as (insert …) insert …` (the last one
 * outside the CTEs). PostgreSQL checks deferred-free foreign keys between them at the end of the
 * statement, so a row may reference one inserted by a sibling (a token its session).
 */
export async function runInserts(db: DbOrTx, inserts: RowInsert[]): Promise<void> {
  await runSets(db, [{ inserts, set: encode(inserts) }]);
}

/** Runs the statement of `sets` (all of one shape), values bound by name. */
async function runSets(db: DbOrTx, sets: Array<{ inserts: RowInsert[]; set: Encoded }>): Promise<void> {
  const { dialect, session } = db as unknown as DrizzleInternals;
  const { shape, literal } = sets[0]!.set;
  const key = `${sets.length}|${shape}`;
  let query = literal ? undefined : built.get(key);
  if (!query) {
    const text = literal ? null : statementOf(db, sets[0]!.inserts, sets.length);
    if (!text) {
      // An SQL expression among the values, or a column computed per row by drizzle ($defaultFn):
      // built each time, as drizzle does, a statement per set.
      for (const { inserts } of sets)
        await (db as unknown as { execute(q: SQL): Promise<unknown> }).execute(literalStatement(db, inserts));
      return;
    }
    query = dialect.sqlToQuery(text);
    if (built.size >= MAX_SHAPES) built.clear();
    built.set(key, query);
  }
  const values: Record<string, unknown> = {};
  for (const [r, { set }] of sets.entries()) for (const [j, v] of set.values.entries()) values[`${r}.${j}`] = v;
  statements++;
  // Named: postgres.js prepares it once per connection. PGlite runs the text with its parameters.
  await session.prepareQuery(query, undefined, "bound_inserts", false).execute(values);
}

/** Sets of rows waiting for the next turn of the event loop, by database object and shape. */
interface Waiter {
  inserts: RowInsert[];
  set: Encoded;
  resolve(): void;
  reject(e: unknown): void;
}
const waiting = new WeakMap<object, Map<string, Waiter[]>>();
/**
 * How many sets one statement takes at most. PGlite runs one statement at a time on its thread: the
 * more sets per statement the less of that thread per set (32 grants: ~1,300 parameters, far below
 * the 65,535 allowed). PostgreSQL runs the pool's statements in parallel: a few sets per statement
 * keep several in flight (measured with 16 grants at once, docs/benchmarks.md: 4–6 sets gave the
 * highest rate, 32 less than 1 — one backend working while the others wait).
 */
export const MAX_SETS = { pglite: 32, postgres: 6 } as const;

/**
 * `runInserts` for writes of their own (never inside a transaction: `db` is the application's
 * database object): sets of the same shape that arrive in the same turn of the event loop — the
 * client credentials grants of concurrent requests — go as ONE statement of multi-row inserts: one
 * round trip and one commit for all of them instead of one each. Each set is still all of its rows
 * (a grant's session, token, audit entry and event) and the statement is atomic, all or none. When
 * it fails for a reason of its rows (a constraint: a client deleted meanwhile), each set is run
 * again alone, so that a set's failure is its own; when the database is unavailable every set gets
 * that failure (a 503 each, nothing written).
 */
export function runInsertsCoalesced(db: DbOrTx, inserts: RowInsert[], maxSets: number): Promise<void> {
  const set = encode(inserts);
  if (set.literal) return runSets(db, [{ inserts, set }]);
  let byShape = waiting.get(db);
  if (!byShape) waiting.set(db, (byShape = new Map()));
  let batch = byShape.get(set.shape);
  if (!batch || batch.length >= maxSets) {
    const fresh: Waiter[] = [];
    const shapes = byShape;
    batch = fresh;
    shapes.set(set.shape, fresh);
    setImmediate(() => {
      if (shapes.get(set.shape) === fresh) shapes.delete(set.shape);
      void flush(db, fresh);
    });
  }
  const waiters = batch;
  return new Promise<void>((resolve, reject) => waiters.push({ inserts, set, resolve, reject }));
}

async function flush(db: DbOrTx, waiters: Waiter[]): Promise<void> {
  try {
    await runSets(db, waiters);
    for (const w of waiters) w.resolve();
  } catch (e) {
    if (waiters.length === 1 || databaseFailure(e)) {
      for (const w of waiters) w.reject(e);
      return;
    }
    // Nothing was written (one statement): each set alone, with its own outcome.
    await Promise.all(waiters.map((w) => runSets(db, [w]).then(w.resolve, w.reject)));
  }
}

/** A number per table object (two schemas may hold tables of the same name). */
const tableIds = new WeakMap<PgTable, number>();
let nextTableId = 0;
function tableName(table: PgTable): number {
  let id = tableIds.get(table);
  if (id === undefined) tableIds.set(table, (id = nextTableId++));
  return id;
}

type Inserter = {
  insert(t: PgTable): { values(row: Record<string, unknown> | Record<string, unknown>[]): { getSQL(): SQL } };
};

/**
 * The statement with a placeholder per given value, `n` rows per table (one per set of rows); null if
 * a table computes an omitted column in JavaScript.
 */
function statementOf(db: DbOrTx, inserts: RowInsert[], n: number): SQL | null {
  const parts: SQL[] = [];
  let first = 0; // the position of the table's first value in a set's values (encode's order)
  for (const { table, row } of inserts) {
    const rows: Record<string, unknown>[] = [];
    let j = first;
    for (let r = 0; r < n; r++) {
      j = first;
      const placeholders: Record<string, unknown> = {};
      // Wrapped in SQL so that drizzle binds the placeholder as it is: the values come encoded.
      for (const key in row) if (row[key] !== undefined) placeholders[key] = sql`${sql.placeholder(`${r}.${j++}`)}`;
      rows.push(placeholders);
    }
    first = j;
    for (const [key, column] of Object.entries(getTableColumns(table))) {
      const computed = (column as { defaultFn?: unknown; onUpdateFn?: unknown }).defaultFn;
      if (!(key in rows[0]!) && computed) return null;
    }
    parts.push((db as unknown as Inserter).insert(table).values(rows).getSQL());
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

let statements = 0;
/** How many bound statements this process has sent (tests, bench/grant-cost.ts: statements per grant). */
export const boundStatements = () => statements;

/** How many statement shapes are kept (tests). */
export const boundShapes = () => built.size;
