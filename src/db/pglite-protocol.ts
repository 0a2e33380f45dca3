// What the main thread and the embedded database's thread (pglite-thread.ts) say to each other.
// Everything crosses by structured clone: functions cannot, so a query's parsers are sent as the
// list of types whose text is kept as is (drizzle's only kind), and errors as their plain fields.
import { fileURLToPath } from "node:url";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";

/** The extensions every Tessera database loads (the migrations create pg_trgm). */
export const PGLITE_EXTENSIONS = { pg_trgm };

/**
 * PostgreSQL settings of the embedded engine beside PGlite's own defaults. shared_buffers: initdb
 * writes 128MB, all of it held in the WebAssembly heap once touched; 16MB holds an authentication
 * service's hot rows (tokens, users, policies), and the pages it misses are read from the OS page
 * cache (measured: a freshly opened database with 200 queries resides in 294 MB at 128MB, 187 MB at
 * 16MB).
 */
export const PGLITE_SETTINGS = ["-c", "shared_buffers=16MB"];

/** PGlite's WebAssembly, read beside its module and compiled (~130 ms on a 2-core machine). */
export async function compileEngine(): Promise<WebAssembly.Module> {
  const path = fileURLToPath(import.meta.resolve("@electric-sql/pglite/pglite.wasm"));
  return WebAssembly.compile(await Bun.file(path).arrayBuffer());
}

/** PGlite's runtime files when the executable carries them (a single-file build). */
export interface CarriedModules {
  wasm: WebAssembly.Module;
  initdbWasm: WebAssembly.Module;
  fsBundle: ArrayBuffer;
  pgTrgmBundle: ArrayBuffer;
}

export type ThreadRequest =
  | {
      id: number;
      op: "open";
      dataDir: string;
      template?: Blob;
      /** PGlite's engine compiled by the main thread (pglite-client.ts, `compiledEngine`). */
      engine?: WebAssembly.Module;
      modules?: CarriedModules;
    }
  | {
      id: number;
      op: "query";
      text: string;
      params?: unknown[];
      rowMode?: "array" | "object";
      keepText?: number[];
      tx?: number;
    }
  | { id: number; op: "begin" }
  | { id: number; op: "end"; tx: number; commit: boolean }
  | { id: number; op: "listen"; channel: string }
  | { id: number; op: "unlisten"; channel: string }
  | { id: number; op: "close" }
  /** A consistent copy of the data directory (PGlite's dumpDataDir, a gzip'd tar), between statements. */
  | { id: number; op: "dump" }
  /** Compile the engine now, for the `open` to come (a thread started early: pglite-client.ts). */
  | { id: number; op: "prepare" };

export type ThreadReply =
  | { id: number; value?: unknown; error?: SerializedError }
  | { notify: string; payload: string };

/** An error's name, message and own data fields (SQLSTATE `code`, `constraint`, Emscripten's `errno`…). */
export type SerializedError = Record<string, unknown> & { name: string; message: string };

export function serializeError(e: unknown): SerializedError {
  if (!(e instanceof Error) && (typeof e !== "object" || e === null)) return { name: "Error", message: String(e) };
  const out: SerializedError = {
    name: String((e as Error).name ?? "Error"),
    message: String((e as Error).message ?? ""),
  };
  for (const [key, value] of Object.entries(e)) {
    if (value === null || ["string", "number", "boolean"].includes(typeof value)) out[key] = value;
  }
  return out;
}

/** The error again, as an Error with the same fields (so failure classification reads it unchanged). */
export function deserializeError(s: SerializedError): Error {
  const e = new Error(s.message);
  Object.assign(e, s);
  e.name = s.name;
  return e;
}
