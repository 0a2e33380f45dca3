// `tessera import URL [--force]` and `tessera export URL [--force]`: the command-line face of
// db/transfer.ts, with a progress bar on stderr and the row count of each table at the end.
import type { Config } from "../config/config.ts";
import { exportDatabase, importDatabase, type TransferProgress, type TransferResult } from "../db/transfer.ts";

const WIDTH = 30;

/** Draws one line, rewritten in place on a terminal (a plain line per table otherwise). */
export function progressBar(out: NodeJS.WriteStream = process.stderr): (p: TransferProgress) => void {
  let lastTable = "";
  return (p) => {
    const fraction = p.total ? p.copied / p.total : 1;
    const filled = Math.round(fraction * WIDTH);
    const line = `[${"#".repeat(filled)}${"-".repeat(WIDTH - filled)}] table ${p.tableIndex + 1}/${p.tableCount} ${p.table} ${p.copied}/${p.total}`;
    if (out.isTTY) out.write(`\r${line}\x1b[K${p.tableIndex + 1 === p.tableCount && p.copied === p.total ? "\n" : ""}`);
    else if (p.copied === p.total && p.table !== lastTable) out.write(`${line}\n`);
    if (p.copied === p.total) lastTable = p.table;
  };
}

export function formatCounts(result: TransferResult): string {
  const width = Math.max(...result.tables.map((t) => t.table.length));
  return result.tables.map((t) => `${t.table.padEnd(width)}  ${t.rows}`).join("\n");
}

export async function runTransfer(
  command: "import" | "export",
  url: string | undefined,
  force: boolean,
  config: Config,
): Promise<number> {
  if (!url || !/^postgres(ql)?:\/\//.test(url)) {
    console.error(`usage: tessera ${command} postgres://USER@HOST/DB [--force] [--config PATH]`);
    return 2;
  }
  const onProgress = progressBar();
  try {
    const result =
      command === "import"
        ? await importDatabase({ from: url, toDataDir: config.data_dir, force, onProgress })
        : await exportDatabase({ fromDataDir: config.data_dir, to: url, force, onProgress });
    const where =
      command === "import"
        ? `into the embedded database in ${config.data_dir}`
        : `from ${config.data_dir} to PostgreSQL`;
    console.log(`${command === "import" ? "imported" : "exported"} ${where}:\n${formatCounts(result)}`);
    return 0;
  } catch (e) {
    console.error(`\ntessera ${command}: ${(e as Error).message}`);
    return 1;
  }
}
