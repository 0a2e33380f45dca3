// Entry of the `tessera` command (bin/tessera.js runs it on Bun): `serve` (default), `migrate`,
// `bootstrap`, `import`, `export`, `token …`, `users|tenants|groups|policies …`. See src/cli/main.ts
// and `--help`.
//   bun src/cli.ts bootstrap admin s3cret     (npm run bootstrap -- admin s3cret, npx tessera bootstrap …)
// Imported here, not statically: a module that cannot load (a broken install) is one line too.
let runCli: (args: string[]) => Promise<number>;
try {
  ({ runCli } = await import("./cli/main.ts"));
} catch (e) {
  console.error(
    `tessera: cannot load the command line (${e instanceof Error ? e.message : String(e)}); reinstall with \`npm ci\``,
  );
  process.exit(1);
}
const code = await runCli(process.argv.slice(2));
process.exit(code);
export {};
