#!/usr/bin/env node
// `npx tessera …`: Tessera runs on Bun, which `npm install` brings as a dependency of the project.
// Under Node this launcher runs the CLI with that Bun; under Bun it runs it in-process.
//
// The launcher stands for the service: SIGTERM, SIGINT and SIGHUP (log reopening) are passed to
// Bun and the launcher exits with Bun's code. `npx` starts it through `sh -c`, and sh forwards no
// signal: when npm, told to stop, ends that shell, this launcher is left to its new parent (init or
// a subreaper). Losing the parent that started it is treated as SIGTERM, so stopping the process
// the operator started stops the service, whatever started it.
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
  const forward = (signal) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => forward(signal));
  const parent = process.ppid;
  const orphaned = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(orphaned);
    forward("SIGTERM");
  }, 200);
  orphaned.unref();
  child.on("error", (e) => {
    console.error(`tessera: cannot start Bun (${e.message}); run \`npm install\` in ${root} first`);
    process.exit(3);
  });
  // A child ended by a signal: the shell's convention, 128 + the signal's number.
  const signalNumbers = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 + (signalNumbers[signal] ?? 0) : 0)));
}
