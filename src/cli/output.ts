// How the CLI answers: JSON (`--json`, for scripts) or readable tables, progress bars on stderr
// for long work (only on a terminal), and exit codes scripts can trust.
import { SingleBar, Presets } from "cli-progress";
import Table from "cli-table3";

/** 0 success · 1 refused (the service said no, or a token is invalid) · 2 usage · 3 unavailable. */
export const EXIT = { ok: 0, refused: 1, usage: 2, unavailable: 3 } as const;

/** An expected failure: its message is printed as is and the process exits with `code`. */
export class CliFailure extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (Array.isArray(value)) return value.map(cell).join(", ");
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}

/** Rows as a table of `columns`. */
export function printTable(rows: Record<string, unknown>[], columns: string[]): void {
  const table = new Table({ head: columns, style: { head: [], border: [] } });
  for (const row of rows) table.push(columns.map((c) => cell(row[c])));
  console.log(table.toString());
}

/** One record as a two-column table (field, value). */
export function printRecord(record: Record<string, unknown>): void {
  const table = new Table({ style: { head: [], border: [] } });
  for (const [k, v] of Object.entries(record)) table.push({ [k]: cell(v) });
  console.log(table.toString());
}

/** A progress bar on stderr when it is a terminal; a no-op otherwise (pipes, CI logs). */
export function progress(label: string, total: number): { tick(n?: number): void; setTotal(n: number): void; stop(): void } {
  if (!process.stderr.isTTY) return { tick() {}, setTotal() {}, stop() {} };
  const bar = new SingleBar({ format: `${label} [{bar}] {value}/{total}`, stream: process.stderr, hideCursor: true }, Presets.shades_classic);
  bar.start(total, 0);
  return { tick: (n = 1) => bar.increment(n), setTotal: (n) => bar.setTotal(n), stop: () => bar.stop() };
}
