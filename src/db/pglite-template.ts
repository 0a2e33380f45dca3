// A first start of the embedded database without paying for initdb. PGlite's initdb (PostgreSQL's
// bootstrap of its catalogs, in WebAssembly) is most of a first start (measured on 2 loaded cores:
// initdb 14.7 s, the migrations 1.3 s, a reopen 0.45 s) and grows PGlite's heap to ~1 GB, which a
// WebAssembly heap never gives back. So initdb runs once per machine and PGlite version, in a thread
// of its own that is then ended (its memory with it), into a template directory; an empty data
// directory starts as a copy of it, and the migrations run as on any start. `npm install` prepares
// the template (scripts/pglite-template.ts); without it, the first start makes it.
//
// The template holds a bare initdb'd cluster, before any migration: it carries no tenant uuid or
// other row of Tessera's (those come from the migrations, per database), and never goes stale when
// the migrations change.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { copyFile, cp } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PgliteThreadClient } from "./pglite-client.ts";
import type { CarriedModules } from "./pglite-protocol.ts";

const projectRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** What the template depends on: PGlite's version (a single-file build: the executable itself). */
function pgliteVersion(): string {
  try {
    const pkg = join(projectRoot, "node_modules", "@electric-sql", "pglite", "package.json");
    return (JSON.parse(readFileSync(pkg, "utf8")) as { version: string }).version;
  } catch {
    const exe = statSync(process.execPath);
    return `carried-${exe.size}-${Math.floor(exe.mtimeMs)}`;
  }
}

/**
 * Where the template lives: `TESSERA_PGLITE_TEMPLATE` if set; else the project's
 * node_modules/.cache (made again by every install); else the user's cache directory (the
 * single-file executable, which has no node_modules).
 */
export function templateDir(): string {
  if (process.env.TESSERA_PGLITE_TEMPLATE) return process.env.TESSERA_PGLITE_TEMPLATE;
  const modules = join(projectRoot, "node_modules");
  const cache = existsSync(modules)
    ? join(modules, ".cache", "tessera")
    : join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "tessera");
  return join(cache, `pglite-${pgliteVersion()}`);
}

/** True when `dataDir` holds no cluster yet (it may hold Tessera's lock file). */
export const isEmptyDataDir = (dataDir: string) => !existsSync(join(dataDir, "PG_VERSION"));

/**
 * The template directory, made first if missing: initdb in a throw-away thread, then an atomic
 * rename, so concurrent makers (two installs, a start during an install) never see half of one.
 * Null when it cannot be written (a read-only cache): the caller then runs initdb in place.
 */
export async function ensureTemplate(modules?: CarriedModules, dir = templateDir()): Promise<string | null> {
  if (existsSync(join(dir, "PG_VERSION"))) return dir;
  const building = `${dir}.${process.pid}.${Date.now()}`;
  try {
    mkdirSync(dirname(dir), { recursive: true });
    const client = await PgliteThreadClient.open(building, { modules });
    await client.close(); // a clean shutdown: the copy starts without recovery
    if (!existsSync(join(dir, "PG_VERSION"))) {
      rmSync(dir, { recursive: true, force: true });
      renameSync(building, dir);
    }
    return dir;
  } catch {
    return existsSync(join(dir, "PG_VERSION")) ? dir : null;
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
}

/**
 * Starts an empty data directory as a copy of the template; false when there is no template. The
 * copy (~1,000 files, 39 MB) is asynchronous: the service's modules load meanwhile on a first start.
 * `PG_VERSION`, which marks a directory as holding a cluster, is copied last: a copy interrupted
 * midway is seeded again by the next start.
 */
export async function seedDataDir(dataDir: string, modules?: CarriedModules): Promise<boolean> {
  const template = await ensureTemplate(modules);
  if (!template) return false;
  const marker = join(template, "PG_VERSION");
  await cp(template, dataDir, { recursive: true, filter: (source) => source !== marker });
  await copyFile(marker, join(dataDir, "PG_VERSION"));
  return true;
}
