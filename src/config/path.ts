// Which configuration file the process reads, without the configuration's schema (zod, yaml): main.ts
// asks it before anything heavy loads, to start the embedded database's thread early
// (db/pglite-early.ts); config.ts reads the file it names.
import { existsSync } from "node:fs";

export class ConfigError extends Error {}

/** Which file to read: explicit path, then TESSERA_CONFIG, then ./config.yml if present. */
export function resolveConfigPath(argv: string[], env: NodeJS.ProcessEnv): string | null {
  const i = argv.indexOf("--config");
  if (i >= 0) {
    const path = argv[i + 1];
    if (!path) throw new ConfigError("--config needs a file path");
    return path;
  }
  if (env.TESSERA_CONFIG) return env.TESSERA_CONFIG;
  return existsSync("./config.yml") ? "./config.yml" : null;
}
