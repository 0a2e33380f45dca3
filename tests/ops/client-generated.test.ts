// The committed TypeScript client (clients/typescript) is what `npm run client:generate` makes
// from the current routes: regenerate into a temporary directory and compare.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clientDir, generateClient, GENERATED_FILES } from "../../scripts/generate-client.ts";

const dir = mkdtempSync(join(tmpdir(), "tessera-client-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("clients/typescript is up to date with the OpenAPI document (else: npm run client:generate)", async () => {
  await generateClient(dir);
  for (const file of GENERATED_FILES) {
    const fresh = readFileSync(join(dir, file), "utf8");
    const committed = readFileSync(join(clientDir, file), "utf8");
    if (fresh !== committed)
      throw new Error(`clients/typescript/${file} is stale: run \`npm run client:generate\` and commit the result`);
    expect(fresh.length).toBeGreaterThan(100);
  }
}, 120_000);
