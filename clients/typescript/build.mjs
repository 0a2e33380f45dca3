// `npm run build` (run by `npm pack` through prepack): the package's ESM JavaScript and declarations
// in dist/. tsc rewrites the relative `.ts` imports of the JavaScript; the declarations' imports are
// rewritten here to `.js` (which TypeScript resolves to the `.d.ts` beside it), so that a consumer
// on any module resolution reads them, and the generated schema.d.ts is copied beside them.
import { execFileSync } from "node:child_process";
import { copyFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
rmSync(dist, { recursive: true, force: true });
execFileSync(join(here, "node_modules", ".bin", "tsc"), ["-p", join(here, "tsconfig.build.json")], {
  stdio: "inherit",
});
copyFileSync(join(here, "schema.d.ts"), join(dist, "schema.d.ts"));
for (const file of readdirSync(dist).filter((f) => f.endsWith(".d.ts"))) {
  const path = join(dist, file);
  writeFileSync(path, readFileSync(path, "utf8").replace(/(from\s+"\.\/[^"]+?)(\.d)?\.ts"/g, '$1.js"'));
}
