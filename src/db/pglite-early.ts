// The embedded database's thread, started by main.ts before anything heavy loads: the configuration's
// schema (zod, yaml) and the database layer take ~60 ms to load and run on a 2-core machine, and the
// thread's start and engine compile (~160 ms) run beside them. Whether the database is embedded is
// read off the configuration file's text (a top-level `db_uri` with a value, or DATABASE_URL in the
// environment, means PostgreSQL); the parsed configuration decides, and main.ts stops a thread
// started on a wrong guess.
import { readFileSync } from "node:fs";
import { resolveConfigPath } from "../config/path.ts";
import { embedded } from "../boot/embedded.ts";
import { PgliteThreadClient } from "./pglite-client.ts";

/** A top-level `db_uri:` followed by a value (not empty, `null`, `~` or a comment). */
const POSTGRES_URI = /^db_uri:[ \t]*(?!(?:null|~|""|'')?[ \t]*(?:#.*)?$)\S/m;

export function startEmbeddedThreadEarly(argv: string[], env: NodeJS.ProcessEnv): void {
  if (embedded?.pglite) return; // a single-file build hands the thread its own compiled engine
  if (env.DATABASE_URL) return; // overrides db_uri (config.ts, applyEnv)
  let text = "";
  try {
    const path = resolveConfigPath(argv, env);
    if (path) text = readFileSync(path, "utf8");
  } catch {
    return; // reading the configuration reports it
  }
  if (!namesPostgres(text)) PgliteThreadClient.startEarly();
}

/** The guess: the configuration file's text sets a top-level `db_uri`. */
export function namesPostgres(configText: string): boolean {
  return POSTGRES_URI.test(configText);
}

/** Stops the early thread if nothing took it: the configuration names PostgreSQL, or no database is opened here. */
export function dropEarlyThread(): void {
  PgliteThreadClient.abandonEarly();
}
