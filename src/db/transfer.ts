// Copies the data of one database into another with Tessera's schema: `importDatabase` from a
// wazo-auth or Tessera PostgreSQL database into the embedded PGlite database, `exportDatabase` the
// other way for operators who outgrow it. The source is only read (one consistent snapshot); the
// target is migrated, then filled in one transaction: tables in foreign-key order, rows in batches
// (as JSON, so every column type travels unchanged), sequences reset. A non-empty target is refused
// unless `force` (then it is emptied first, in the same transaction).
import { sql } from "drizzle-orm";
import { openDatabase, type Database, type Db, type Tx } from "./index.ts";
import { KNOWN_WAZO_REVISIONS } from "./adopt.ts";
import { copyPlan, type TablePlan } from "./transfer-plan.ts";

export interface TransferProgress {
  table: string;
  /** Rows of this table copied so far, and its row count. */
  copied: number;
  total: number;
  tableIndex: number;
  tableCount: number;
}

export interface TransferOptions {
  force?: boolean;
  batchSize?: number;
  onProgress?: (p: TransferProgress) => void;
}

export interface TransferResult {
  tables: Array<{ table: string; rows: number }>;
}

export class TransferError extends Error {}

/** Reads one JSON text value per query, from a consistent snapshot of the source. */
export type SourceReader = (query: string) => Promise<string>;

export async function importDatabase(
  opts: TransferOptions & { from: string; toDataDir: string },
): Promise<TransferResult> {
  return withPostgresSource(opts.from, async (read) => {
    await refuseUnknownWazoRevision(read); // before the embedded database is even created
    const target = await openDatabase({ dataDir: opts.toDataDir });
    try {
      return await copyInto(read, target, opts);
    } finally {
      await target.close();
    }
  });
}

export async function exportDatabase(
  opts: TransferOptions & { fromDataDir: string; to: string },
): Promise<TransferResult> {
  const source = await openDatabase({ dataDir: opts.fromDataDir });
  try {
    const target = await openDatabase({ url: opts.to, poolSize: 2 });
    try {
      // The embedded database belongs to this process (its lock): no writer can change it meanwhile.
      return await copyInto((q) => firstText(source.db, q), target, opts);
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

async function withPostgresSource<T>(url: string, body: (read: SourceReader) => Promise<T>): Promise<T> {
  const { default: postgres } = await import("postgres");
  const client = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    let out!: T;
    await client.begin("isolation level repeatable read read only", async (tx) => {
      out = await body(async (q) => {
        const [row] = await tx.unsafe(q);
        return String(Object.values(row ?? {})[0] ?? "null");
      });
    });
    return out;
  } finally {
    await client.end({ timeout: 5 });
  }
}

async function firstText(db: Db | Tx, query: string): Promise<string> {
  const result = (await db.execute(sql.raw(query))) as unknown;
  const rows = (Array.isArray(result) ? result : ((result as { rows?: unknown[] }).rows ?? [])) as Array<
    Record<string, unknown>
  >;
  const value = rows[0] ? Object.values(rows[0])[0] : null;
  return typeof value === "string" ? value : JSON.stringify(value ?? null);
}

const q = (name: string) => `"${name.replaceAll(`"`, `""`)}"`;
const lit = (text: string) => `'${text.replaceAll("'", "''")}'`;

async function copyInto(read: SourceReader, target: Database, opts: TransferOptions): Promise<TransferResult> {
  const batchSize = opts.batchSize ?? 1000;
  const db = target.db as unknown as { transaction<T>(f: (tx: Tx) => Promise<T>): Promise<T> };
  return db.transaction(async (tx) => {
    const { targetTables, tables: plan } = await copyPlan(read, (query) => firstText(tx, query));
    if (!opts.force && (await targetHasData(tx))) {
      throw new TransferError(
        "the target database already holds users or tenants of its own; use --force to replace its content",
      );
    }
    await tx.execute(sql.raw(`TRUNCATE ${targetTables.map(q).join(", ")} RESTART IDENTITY CASCADE`));
    const result: TransferResult = { tables: [] };
    for (const [tableIndex, table] of plan.entries()) {
      const total = Number(await read(`select count(*)::text from ${q(table.table)}`));
      let copied = 0;
      opts.onProgress?.({ table: table.table, copied, total, tableIndex, tableCount: plan.length });
      // Self-referencing tables (the tenant tree) travel in one batch, parents first.
      const size = table.selfReference ? Math.max(total, 1) : batchSize;
      while (copied < total) {
        const batch = await read(selectBatch(table, size, copied));
        await tx.execute(insertBatch(table, table.selfReference ? sortParentsFirst(batch, table) : batch));
        copied = Math.min(total, copied + size);
        opts.onProgress?.({ table: table.table, copied, total, tableIndex, tableCount: plan.length });
      }
      result.tables.push({ table: table.table, rows: total });
    }
    for (const table of plan) {
      if (table.deferred.length) await tx.execute(await restoreDeferred(read, table));
      for (const seq of table.sequences) {
        await tx.execute(
          sql.raw(
            `select setval(${lit(seq.sequence)}, coalesce((select max(${q(seq.column)}) from ${q(table.table)}), 0) + 1, false)`,
          ),
        );
      }
    }
    return result;
  });
}

async function refuseUnknownWazoRevision(read: SourceReader): Promise<void> {
  const present = await read(`select (to_regclass('public.alembic_version_auth') is not null)::text`);
  if (present !== "true") return;
  const versions = JSON.parse(
    await read(`select coalesce(json_agg(version_num), '[]')::text from alembic_version_auth`),
  ) as string[];
  if (versions.length !== 1 || !KNOWN_WAZO_REVISIONS[versions[0]!]) {
    throw new TransferError(
      `the source was written by wazo-auth at schema revision ${versions.join(", ") || "(none)"}, which Tessera cannot import; known revision(s): ${Object.keys(KNOWN_WAZO_REVISIONS).join(", ")}`,
    );
  }
}

async function targetHasData(tx: Tx): Promise<boolean> {
  return (
    (await firstText(
      tx,
      `select (exists (select 1 from auth_user) or (select count(*) from auth_tenant) > 1)::text`,
    )) === "true"
  );
}

function selectBatch(table: TablePlan, size: number, offset: number): string {
  const cols = table.columns
    .map((c) => (table.deferred.includes(c.name) ? `null as ${q(c.name)}` : q(c.name)))
    .join(", ");
  const order = table.orderBy.map(q).join(", ");
  return `select coalesce(json_agg(r), '[]')::text from (select ${cols} from ${q(table.table)} order by ${order} limit ${size} offset ${offset}) r`;
}

/** The batch (a bound JSON parameter) inserted through json_populate_recordset; NULLs the target forbids take its default. */
function insertBatch(table: TablePlan, batch: string) {
  const names = table.columns.map((c) => q(c.name)).join(", ");
  const values = table.columns
    .map((c) => (c.defaultWhenNull ? `coalesce(j.${q(c.name)}, ${c.defaultWhenNull})` : `j.${q(c.name)}`))
    .join(", ");
  return sql`${sql.raw(`insert into ${q(table.table)} (${names}) select ${values} from json_populate_recordset(null::${q(table.table)}, `)}${batch}::json) j`;
}

function sortParentsFirst(batch: string, table: TablePlan): string {
  const rows = JSON.parse(batch) as Array<Record<string, unknown>>;
  const { column, references } = table.selfReference!;
  const byKey = new Map(rows.map((r) => [r[references], r]));
  const placed = new Set<unknown>();
  const out: Array<Record<string, unknown>> = [];
  const place = (row: Record<string, unknown>, depth: number) => {
    if (placed.has(row[references]) || depth > rows.length) return;
    const parent = byKey.get(row[column]);
    if (parent && parent !== row) place(parent, depth + 1);
    placed.add(row[references]);
    out.push(row);
  };
  for (const row of rows) place(row, 0);
  return JSON.stringify(out);
}

/** Columns copied as NULL to break a foreign-key cycle get their values once every table is in. */
async function restoreDeferred(read: SourceReader, table: TablePlan) {
  const keys = table.orderBy;
  const cols = [...keys, ...table.deferred];
  const rows = await read(
    `select coalesce(json_agg(r), '[]')::text from (select ${cols.map(q).join(", ")} from ${q(table.table)}) r`,
  );
  const set = table.deferred.map((c) => `${q(c)} = j.${q(c)}`).join(", ");
  const match = keys.map((k) => `t.${q(k)} = j.${q(k)}`).join(" and ");
  return sql`${sql.raw(`update ${q(table.table)} t set ${set} from json_populate_recordset(null::${q(table.table)}, `)}${rows}::json${sql.raw(`) j where ${match}`)}`;
}
