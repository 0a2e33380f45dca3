// A first start of the embedded database copies an initdb'd template instead of running initdb
// (src/db/pglite-template.ts): the copy is a working database, each copy gets its own rows (the
// template holds no tenant of its own), and a template that cannot be written is not an error.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase } from "../../src/db/index.ts";
import { ensureTemplate, isEmptyDataDir, templateDir } from "../../src/db/pglite-template.ts";
import { tempDirs } from "../helpers/temp-dirs.ts";

const tempDir = tempDirs("tessera-template-");

async function masterTenant(dataDir: string): Promise<string> {
  const database = await openDatabase({ dataDir });
  try {
    const rows = (await database.db.execute(sql`select uuid from auth_tenant where uuid = parent_uuid`)) as unknown as {
      rows?: Array<{ uuid: string }>;
    } & Array<{ uuid: string }>;
    return (rows.rows ?? rows)[0]!.uuid;
  } finally {
    await database.close();
  }
}

describe("the embedded database's template", () => {
  test("is made once, holds an initdb'd cluster and nothing of Tessera's", async () => {
    const dir = await ensureTemplate();
    expect(dir).toBe(templateDir());
    expect(existsSync(join(dir!, "PG_VERSION"))).toBe(true);
    expect(readdirSync(join(dir!, "..")).filter((f) => f.startsWith(`${templateDir().split("/").pop()}.`))).toEqual([]); // no half-built copy left
    expect(await ensureTemplate()).toBe(dir); // already there: nothing to do
  }, 120_000);

  test("an empty data directory starts from it: a working database, with its own master tenant", async () => {
    const a = join(tempDir(), "data");
    const b = join(tempDir(), "data");
    expect(isEmptyDataDir(a)).toBe(true);
    const [ua, ub] = [await masterTenant(a), await masterTenant(b)];
    expect(isEmptyDataDir(a)).toBe(false);
    expect(ua).toMatch(/^[0-9a-f-]{36}$/);
    expect(ua).not.toBe(ub); // the migrations' seed ran per database, not once in the template
    expect(await masterTenant(a)).toBe(ua); // a restart keeps it
  }, 120_000);

  test("a template that cannot be written leaves the first start to initdb (null, no error)", async () => {
    const readOnly = join("/proc", "tessera-template-cannot-exist");
    expect(await ensureTemplate(undefined, readOnly)).toBeNull();
  }, 60_000);
});
