// What a copy between two databases does, read from both catalogues: the tables both have, the
// columns both have, in foreign-key order (a cycle such as tenant contact → user → tenant is broken
// by copying a nullable column later), how rows are ordered, which sequences to reset.

export interface TablePlan {
  table: string;
  columns: Array<{ name: string; defaultWhenNull: string | null }>;
  orderBy: string[];
  /** Nullable foreign-key columns copied as NULL first, filled once every table is in. */
  deferred: string[];
  /** A foreign key to the table itself (single column): rows must arrive parents first. */
  selfReference: { column: string; references: string } | null;
  sequences: Array<{ sequence: string; column: string }>;
}

export interface CopyPlan {
  /** Every table of the target (emptied before the copy). */
  targetTables: string[];
  /** The tables copied, in order. */
  tables: TablePlan[];
}

type Reader = (query: string) => Promise<string>;

interface ColumnInfo {
  table: string;
  column: string;
  nullable: boolean;
  default: string | null;
}

interface ForeignKey {
  table: string;
  ref: string;
  columns: string[];
  refColumns: string[];
}

const COLUMNS = `select coalesce(json_agg(json_build_object('table', table_name, 'column', column_name,
  'nullable', is_nullable = 'YES', 'default', column_default) order by table_name, ordinal_position), '[]')::text
  from information_schema.columns c join information_schema.tables t using (table_schema, table_name)
  where table_schema = 'public' and t.table_type = 'BASE TABLE'`;

const PRIMARY_KEYS = `select coalesce(json_agg(json_build_object('table', c.conrelid::regclass::text, 'columns',
  (select json_agg(a.attname order by k.n) from unnest(c.conkey) with ordinality k(attnum, n)
   join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum))), '[]')::text
  from pg_constraint c where c.contype = 'p' and c.connamespace = 'public'::regnamespace`;

const FOREIGN_KEYS = `select coalesce(json_agg(json_build_object('table', c.conrelid::regclass::text, 'ref', c.confrelid::regclass::text,
  'columns', (select json_agg(a.attname order by k.n) from unnest(c.conkey) with ordinality k(attnum, n)
              join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum),
  'refColumns', (select json_agg(a.attname order by k.n) from unnest(c.confkey) with ordinality k(attnum, n)
              join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.attnum))), '[]')::text
  from pg_constraint c where c.contype = 'f' and c.connamespace = 'public'::regnamespace`;

const unquote = (name: string) => name.replace(/^public\./, "").replace(/^"(.*)"$/, "$1");

export async function copyPlan(readSource: Reader, readTarget: Reader): Promise<CopyPlan> {
  const sourceColumns = JSON.parse(await readSource(COLUMNS)) as ColumnInfo[];
  const targetColumns = JSON.parse(await readTarget(COLUMNS)) as ColumnInfo[];
  const primaryKeys = new Map(
    (JSON.parse(await readTarget(PRIMARY_KEYS)) as Array<{ table: string; columns: string[] }>).map((p) => [
      unquote(p.table),
      p.columns,
    ]),
  );
  const foreignKeys = (JSON.parse(await readTarget(FOREIGN_KEYS)) as ForeignKey[]).map((f) => ({
    ...f,
    table: unquote(f.table),
    ref: unquote(f.ref),
  }));

  const inSource = new Set(sourceColumns.map((c) => `${c.table}.${c.column}`));
  const targetTables = [...new Set(targetColumns.map((c) => c.table))];
  const plans = new Map<string, TablePlan>();
  for (const table of targetTables) {
    const columns = targetColumns.filter((c) => c.table === table && inSource.has(`${table}.${c.column}`));
    if (!columns.length) continue; // the source does not have this table
    const self = foreignKeys.find((f) => f.table === table && f.ref === table && f.columns.length === 1);
    plans.set(table, {
      table,
      columns: columns.map((c) => ({
        name: c.column,
        defaultWhenNull: !c.nullable && c.default && !c.default.startsWith("nextval(") ? c.default : null,
      })),
      orderBy: primaryKeys.get(table) ?? columns.map((c) => c.column),
      deferred: [],
      selfReference: self ? { column: self.columns[0]!, references: self.refColumns[0]! } : null,
      sequences: targetColumns
        .filter((c) => c.table === table && c.default?.startsWith("nextval("))
        .map((c) => ({ column: c.column, sequence: /nextval\('([^']+)'/.exec(c.default!)![1]! })),
    });
  }
  const nullable = new Set(targetColumns.filter((c) => c.nullable).map((c) => `${c.table}.${c.column}`));
  return { targetTables, tables: foreignKeyOrder(plans, foreignKeys, nullable) };
}

/** Kahn's topological sort; a cycle is broken at a foreign key whose columns are all nullable. */
function foreignKeyOrder(plans: Map<string, TablePlan>, foreignKeys: ForeignKey[], nullable: Set<string>): TablePlan[] {
  let edges = foreignKeys.filter((f) => f.table !== f.ref && plans.has(f.table) && plans.has(f.ref));
  const ordered: TablePlan[] = [];
  const remaining = new Set([...plans.keys()].sort());
  while (remaining.size) {
    const ready = [...remaining].filter((t) => !edges.some((e) => e.table === t && remaining.has(e.ref)));
    if (ready.length) {
      for (const t of ready) {
        ordered.push(plans.get(t)!);
        remaining.delete(t);
      }
      continue;
    }
    const live = edges.filter((e) => remaining.has(e.table) && remaining.has(e.ref));
    const breakable = live.find(
      (e) => reaches(live, e.ref, e.table) && e.columns.every((c) => nullable.has(`${e.table}.${c}`)),
    );
    if (!breakable)
      throw new Error(
        `cannot order the tables ${[...remaining].join(", ")}: a foreign-key cycle without a nullable column`,
      );
    plans.get(breakable.table)!.deferred.push(...breakable.columns);
    edges = edges.filter((e) => e !== breakable);
  }
  return ordered;
}

/** True when `from` depends, through `edges`, on `to` (the edge to → from then closes a cycle). */
function reaches(edges: ForeignKey[], from: string, to: string): boolean {
  const seen = new Set<string>();
  const stack = [from];
  while (stack.length) {
    const t = stack.pop()!;
    if (t === to) return true;
    if (seen.has(t)) continue;
    seen.add(t);
    for (const e of edges) if (e.table === t) stack.push(e.ref);
  }
  return false;
}
