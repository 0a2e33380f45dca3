// How the CLI answers: JSON (`--json`, for scripts) or readable tables fitted to the terminal's
// width, colours and progress bars only on a terminal, and exit codes scripts can trust.
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

/** Colours only on a terminal, and never under NO_COLOR (https://no-color.org). */
const colourOn = (stream: NodeJS.WriteStream): boolean => Boolean(stream.isTTY) && !process.env.NO_COLOR;
const paint = (stream: NodeJS.WriteStream, sgr: string, text: string) =>
  colourOn(stream) ? `\x1b[${sgr}m${text}\x1b[0m` : text;
/** `text` without its colours unless `stream` (standard output by default) is a terminal that takes them. */
export const plainUnlessTerminal = (text: string, stream: NodeJS.WriteStream = process.stdout) =>
  colourOn(stream) ? text : text.replace(/\x1b\[[0-9;]*m/g, "");
/** A failure message on stderr (red on a terminal). */
export const failureText = (text: string) => paint(process.stderr, "31", text);

/** The width tables must fit: the terminal's; none when the output is not a terminal (whole values for pipes). */
function terminalWidth(): number | null {
  return process.stdout.isTTY ? process.stdout.columns || 80 : null;
}

/**
 * cli-table3 column widths (padding included) fitting `width` with the borders: each column takes
 * its natural width, and the widest is narrowed first (its cells wrap) until the table fits.
 */
export function fitColumns(natural: number[], width: number): number[] {
  const widths = natural.map((w) => w + 2);
  const budget = width - (widths.length + 1);
  const MIN = 6;
  for (let total = widths.reduce((a, b) => a + b, 0); total > budget; total--) {
    const widest = widths.indexOf(Math.max(...widths));
    if (widths[widest]! <= MIN) break;
    widths[widest]!--;
  }
  return widths;
}

function newTable(rows: string[][], head?: string[]): InstanceType<typeof Table> {
  const width = terminalWidth();
  const all = head ? [head, ...rows] : rows;
  const columns = Math.max(0, ...all.map((r) => r.length));
  const natural = Array.from({ length: columns }, (_, i) =>
    Math.max(1, ...all.map((r) => Bun.stringWidth(r[i] ?? ""))),
  );
  const fitted = width ? { colWidths: fitColumns(natural, width), wordWrap: true, wrapOnWordBoundary: false } : {};
  // Headings bold on a terminal (cli-table3 colours them after wrapping them).
  return new Table({
    ...(head ? { head } : {}),
    style: { head: colourOn(process.stdout) ? ["bold"] : [], border: [] },
    ...fitted,
  });
}

/** Rows as a table of `columns`. */
export function printTable(rows: Record<string, unknown>[], columns: string[]): void {
  const cells = rows.map((row) => columns.map((c) => cell(row[c])));
  const table = newTable(cells, columns);
  for (const row of cells) table.push(row);
  console.log(table.toString());
}

/** One record as a two-column table (field, value). */
export function printRecord(record: Record<string, unknown>): void {
  const cells = Object.entries(record).map(([k, v]) => [k, cell(v)]);
  const table = newTable(cells);
  for (const row of cells) table.push(row);
  console.log(table.toString());
}

/** A command's answer: JSON with `--json`, else a table (a list), a record, or a line. */
export function output(args: { json: boolean }, value: unknown, columns?: string[]): void {
  if (args.json) printJson(value);
  else if (Array.isArray(value)) printTable(value as Record<string, unknown>[], columns ?? Object.keys(value[0] ?? {}));
  else if (value && typeof value === "object") printRecord(value as Record<string, unknown>);
  else console.log(String(value ?? ""));
}

/** A progress bar on stderr when it is a terminal; a no-op otherwise (pipes, CI logs). */
export function progress(
  label: string,
  total: number,
): { tick(n?: number): void; setTotal(n: number): void; stop(): void } {
  if (!process.stderr.isTTY) return { tick() {}, setTotal() {}, stop() {} };
  const bar = new SingleBar(
    { format: `${label} [{bar}] {value}/{total}`, stream: process.stderr, hideCursor: true },
    Presets.shades_classic,
  );
  bar.start(total, 0);
  return { tick: (n = 1) => bar.increment(n), setTotal: (n) => bar.setTotal(n), stop: () => bar.stop() };
}
