// Entry of the `tessera` command (bin/tessera.js runs it on Bun): `serve` (default), `migrate`,
// `bootstrap`, `import`, `export`, `token …`, `users|tenants|groups|policies …`. See src/cli/main.ts
// and `--help`.
//   bun src/cli.ts bootstrap admin s3cret     (npm run bootstrap -- admin s3cret, npx tessera bootstrap …)
import { runCli } from "./cli/main.ts";

const code = await runCli(process.argv.slice(2));
process.exit(code);
