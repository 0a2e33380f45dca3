// What a migrated test template depends on — every file of drizzle/, and for PGlite's its version
// (in templateDir's name, passed as `salt`) — hashed into the template's name, so that a change to
// either makes a new one.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const MIGRATIONS = fileURLToPath(new URL("../../drizzle", import.meta.url));

const keys = new Map<string, string>();

export function migrationsKey(salt = ""): string {
  let key = keys.get(salt);
  if (key) return key;
  const hash = new Bun.CryptoHasher("sha256").update(salt);
  for (const file of readdirSync(MIGRATIONS, { recursive: true }).map(String).sort()) {
    const path = join(MIGRATIONS, file);
    if (statSync(path).isFile()) hash.update(file).update(readFileSync(path));
  }
  key = hash.digest("hex").slice(0, 16);
  keys.set(salt, key);
  return key;
}
