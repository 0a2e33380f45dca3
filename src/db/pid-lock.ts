// PGlite is an embedded, single-process database: a second process opening the same directory
// would corrupt it. A lock file refuses that with a clear message. A pid alone is not proof (after
// a crash, another process may get the same pid, which is the rule in containers where every start
// gets pid 1, 7, …), so the file records the holder's pid, its start time and the boot id
// (/proc/<pid>/stat field 22, /proc/sys/kernel/random/boot_id): the lock is held only while that
// very process still runs. Where /proc does not exist (macOS), a live pid is trusted as before.
// The file is created with O_EXCL, so two processes starting together cannot both take it.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

interface Holder {
  pid: number;
  /** Start time of the process in clock ticks since boot; null without /proc. */
  started: string | null;
  boot: string | null;
}

function readProc(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** Field 22 of /proc/<pid>/stat (after the parenthesised command name, which may hold spaces). */
export function processStartTime(pid: number): string | null {
  const stat = readProc(`/proc/${pid}/stat`);
  if (!stat) return null;
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return fields[19] ?? null;
}

const bootId = (): string | null => readProc("/proc/sys/kernel/random/boot_id")?.trim() ?? null;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

function parseHolder(text: string): Holder | null {
  try {
    const h = JSON.parse(text) as Holder;
    if (typeof h.pid === "number") return h;
  } catch {
    const pid = Number(text.trim()); // the format of older versions: the pid alone
    if (Number.isInteger(pid) && pid > 0) return { pid, started: null, boot: null };
  }
  return null;
}

/** True when the process recorded in the lock still runs (the same process, not a pid reuse). */
export function holderRuns(h: Holder): boolean {
  if (h.pid === process.pid) return false;
  if (!isAlive(h.pid)) return false;
  if (h.boot && bootId() && h.boot !== bootId()) return false;
  if (h.started) {
    const now = processStartTime(h.pid);
    if (now !== null) return now === h.started;
  }
  return true;
}

export function lockDataDir(dataDir: string): { release(): void } {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, "tessera.pid");
  const me: Holder = { pid: process.pid, started: processStartTime(process.pid), boot: bootId() };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(path, JSON.stringify(me), { flag: "wx" });
      return { release: () => rmSync(path, { force: true }) };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const holder = existsSync(path) ? parseHolder(readFileSync(path, "utf8")) : null;
    if (holder && holderRuns(holder)) {
      throw new Error(
        `the embedded database in ${dataDir} is in use by process ${holder.pid}; stop it first (or use PostgreSQL with DATABASE_URL)`,
      );
    }
    rmSync(path, { force: true }); // stale: its process is gone
  }
  throw new Error(`cannot take the lock ${path}: another process keeps taking it`);
}
