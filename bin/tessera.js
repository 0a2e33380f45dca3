#!/usr/bin/env node
// `npx tessera …`: Tessera runs on Bun, which `npm install` brings as a dependency of the project.
// Under Node this launcher runs the CLI with that Bun; under Bun it runs it in-process.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const entry = join(root, "src", "cli.ts");

if (process.versions.bun) {
  await import(entry);
} else {
  const local = join(root, "node_modules", ".bin", process.platform === "win32" ? "bun.exe" : "bun");
  const bun = existsSync(local) ? local : "bun";
  const child = spawn(bun, [entry, ...process.argv.slice(2)], { stdio: "inherit" });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal));
  child.on("error", (e) => {
    console.error(`tessera: cannot start Bun (${e.message}); run \`npm install\` in ${root} first`);
    process.exit(3);
  });
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
