// What a migrated test template depends on — PGlite's version (in templateDir's name) and every file
// of drizzle/ — hashed into the template's name, so that a change to either makes a new one.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { templateDir } from "../../src/db/pglite-template.ts";

export const MIGRATIONS = fileURLToPath(new URL("../../drizzle", import.meta.url));

let key: string | null = null;

export function migrationsKey(): string {
  if (key) return key;
  const hash = new Bun.CryptoHasher("sha256").update(templateDir());
  for (const file of readdirSync(MIGRATIONS, { recursive: true }).map(String).sort()) {
    const path = join(MIGRATIONS, file);
    if (statSync(path).isFile()) hash.update(file).update(readFileSync(path));
  }
  key = hash.digest("hex").slice(0, 16);
  return key;
}
