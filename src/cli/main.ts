// The `tessera` command (citty): local commands on the configured database, remote ones through
// the typed client. Every command answers `--help`; exit codes are in output.ts (EXIT).
import { defineCommand, renderUsage, runCommand, type CommandDef } from "citty";
import { configCommand } from "./config.ts";
import { sessionsCommand } from "./relations.ts";
import { auditCommand } from "./audit.ts";
import { sessionCommands } from "./session.ts";
import {
  bootstrapCommand,
  exportCommand,
  importCommand,
  migrateCommand,
  rotateOidcKeysCommand,
  serveCommand,
} from "./local.ts";
import { closestName } from "../domain/text-distance.ts";
import { CliFailure, EXIT, failureText, plainUnlessTerminal } from "./output.ts";
import { resourceCommands } from "./resources.ts";
import { scimTokensCommand } from "./scim.ts";
import { tokenCommand } from "./token.ts";
import { VERSION } from "../boot/version.ts";
import { backupCommand, restoreCommand } from "./backup.ts";

export const tesseraCommand = defineCommand({
  meta: {
    name: "tessera",
    version: VERSION,
    description: "Tessera, a wazo-auth compatible authentication service: run it and administer it",
  },
  subCommands: {
    serve: serveCommand,
    migrate: migrateCommand,
    bootstrap: bootstrapCommand,
    import: importCommand,
    export: exportCommand,
    config: configCommand,
    backup: backupCommand,
    restore: restoreCommand,
    "rotate-oidc-keys": rotateOidcKeysCommand,
    token: tokenCommand,
    ...sessionCommands,
    sessions: sessionsCommand,
    audit: auditCommand,
    "scim-tokens": scimTokensCommand,
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

/** The help of the command `rawArgs` names (citty colours it: only a terminal keeps the colours). */
async function showUsage(rawArgs: string[]): Promise<void> {
  console.log(`${plainUnlessTerminal(await renderUsage(...(await resolve(tesseraCommand, rawArgs))))}\n`);
}

/**
 * The `--options` of `rawArgs` that `cmd` does not declare, each with the declared one it probably
 * meant: citty would ignore them, and `users create --usernme bob` would create an empty user.
 */
function unknownOptions(cmd: CommandDef, rawArgs: string[]): string[] {
  const declared = new Set(["help", "version"]);
  for (const [name, def] of Object.entries(
    (cmd.args ?? {}) as Record<string, { type?: string; alias?: string | string[] }>,
  )) {
    if (def.type === "positional") continue;
    for (const n of [name, ...[def.alias ?? []].flat()]) declared.add(n);
    if (def.type === "boolean") declared.add(`no-${name}`);
  }
  const end = rawArgs.indexOf("--");
  return (end >= 0 ? rawArgs.slice(0, end) : rawArgs)
    .filter((a) => a.startsWith("--") && a.length > 2)
    .map((a) => a.slice(2).split("=")[0]!)
    .filter((name) => !declared.has(name))
    .map((name) => {
      const hint = closestName(name, declared);
      return `unknown option --${name}${hint ? ` (did you mean --${hint}?)` : ""}`;
    });
}

/** Runs the CLI; resolves to the exit code (serve never resolves). */
export async function runCli(rawArgs: string[]): Promise<number> {
  // No command (or only options): serve, as `npm start` and older scripts expect.
  if (
    rawArgs.length === 0 ||
    (rawArgs[0]!.startsWith("-") && !["-h", "--help", "-v", "--version"].includes(rawArgs[0]!))
  )
    rawArgs = ["serve", ...rawArgs];
  if (rawArgs.includes("--help") || rawArgs.includes("-h")) {
    await showUsage(rawArgs);
    return EXIT.ok;
  }
  if (rawArgs.length === 1 && (rawArgs[0] === "--version" || rawArgs[0] === "-v")) {
    console.log(VERSION);
    return EXIT.ok;
  }
  const [command] = await resolve(tesseraCommand, rawArgs);
  const unknown = command.run ? unknownOptions(command, rawArgs) : [];
  if (unknown.length > 0) {
    console.error(failureText(`tessera: ${unknown.join("; ")} (see --help)`));
    return EXIT.usage;
  }
  try {
    await runCommand(tesseraCommand, { rawArgs });
    return EXIT.ok;
  } catch (e) {
    if (e instanceof CliFailure) {
      if (e.message) console.error(failureText(e.message));
      return e.code;
    }
    if ((e as { name?: string }).name === "CLIError") {
      await showUsage(rawArgs);
      // citty colours the names in its messages (`Unknown command …`): plain unless stderr takes colours.
      console.error(`\n${plainUnlessTerminal((e as Error).message, process.stderr)}`);
      return EXIT.usage;
    }
    // An unexpected failure: one line; the stack only on request (never shown to a user by default).
    console.error(
      `tessera: ${process.env.TESSERA_DEBUG ? ((e as Error).stack ?? e) : e instanceof Error ? e.message : String(e)}`,
    );
    return EXIT.unavailable;
  }
}
