// The `tessera` command (citty): local commands on the configured database, remote ones through
// the typed client. Every command answers `--help`; exit codes are in output.ts (EXIT).
import { defineCommand, runCommand, showUsage, type CommandDef } from "citty";
import { configCommand } from "./config.ts";
import { bootstrapCommand, exportCommand, importCommand, migrateCommand, serveCommand } from "./local.ts";
import { CliFailure, EXIT } from "./output.ts";
import { resourceCommands } from "./resources.ts";
import { tokenCommand } from "./token.ts";

export const tesseraCommand = defineCommand({
  meta: { name: "tessera", version: "0.1.0", description: "Tessera, a wazo-auth compatible authentication service: run it and administer it" },
  subCommands: {
    serve: serveCommand,
    migrate: migrateCommand,
    bootstrap: bootstrapCommand,
    import: importCommand,
    export: exportCommand,
    config: configCommand,
    token: tokenCommand,
    ...resourceCommands,
  },
});

/** The command and sub-command chain `rawArgs` names (for `--help` and usage errors). */
async function resolve(cmd: CommandDef, rawArgs: string[]): Promise<[CommandDef, CommandDef | undefined]> {
  let current = cmd;
  let parent: CommandDef | undefined;
  for (const arg of rawArgs) {
    if (arg.startsWith("-")) break;
    const subs = (await current.subCommands) as Record<string, CommandDef> | undefined;
    const next = subs?.[arg];
    if (!next) break;
    parent = current;
    current = next;
  }
  return [current, parent];
}

/** Runs the CLI; resolves to the exit code (serve never resolves). */
export async function runCli(rawArgs: string[]): Promise<number> {
  // No command (or only options): serve, as `npm start` and older scripts expect.
  if (rawArgs.length === 0 || (rawArgs[0]!.startsWith("-") && !["-h", "--help", "-v", "--version"].includes(rawArgs[0]!))) rawArgs = ["serve", ...rawArgs];
  if (rawArgs.includes("--help") || rawArgs.includes("-h")) {
    await showUsage(...(await resolve(tesseraCommand, rawArgs)));
    return EXIT.ok;
  }
  if (rawArgs.length === 1 && (rawArgs[0] === "--version" || rawArgs[0] === "-v")) {
    console.log("0.1.0");
    return EXIT.ok;
  }
  try {
    await runCommand(tesseraCommand, { rawArgs });
    return EXIT.ok;
  } catch (e) {
    if (e instanceof CliFailure) {
      if (e.message) console.error(e.message);
      return e.code;
    }
    if ((e as { name?: string }).name === "CLIError") {
      await showUsage(...(await resolve(tesseraCommand, rawArgs)));
      console.error(`\n${(e as Error).message}`);
      return EXIT.usage;
    }
    // An unexpected failure: one line; the stack only on request (never shown to a user by default).
    console.error(`tessera: ${process.env.TESSERA_DEBUG ? ((e as Error).stack ?? e) : e instanceof Error ? e.message : String(e)}`);
    return EXIT.unavailable;
  }
}
