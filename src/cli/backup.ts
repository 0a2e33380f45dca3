// `tessera backup --output FILE`: a consistent copy of the embedded database taken by the running
// service (GET /0.1/backup: the process holding the data directory is the one that can copy it);
// `tessera restore FILE`: that copy unpacked into an empty data directory, the service stopped.
// PostgreSQL has its own tools (pg_dump, pg_restore): docs/operations.md, "Backups".
import { existsSync, readdirSync, renameSync, rmSync } from "node:fs";
import { defineCommand } from "citty";
import { configArg, configFrom } from "./local.ts";
import { CliFailure, EXIT } from "./output.ts";
import { remoteArgs, type RemoteArgs, withClient } from "./remote.ts";

export const backupCommand = defineCommand({
  meta: {
    name: "backup",
    description: "Copy the running service's embedded database into FILE (a gzip'd tar; needs auth.backup.read)",
  },
  args: {
    ...remoteArgs,
    output: { type: "string", description: "The archive to write", required: true, valueHint: "FILE" },
  },
  async run({ args }) {
    await withClient(args as RemoteArgs, async (client) => {
      const res = await fetch(`${args.url.replace(/\/+$/, "")}/0.1/backup`, {
        headers: { "X-Auth-Token": client.token ?? "" },
      });
      if (!res.ok) {
        const body = (await res.json().catch(() => null)) as { error_id?: string; message?: string } | null;
        throw new CliFailure(
          `backup failed (${res.status}${body ? ` ${body.error_id}: ${body.message}` : ""})`,
          res.status >= 500 ? EXIT.unavailable : EXIT.refused,
        );
      }
      // Written beside the target, then renamed: FILE is never a partial archive.
      const partial = `${args.output}.partial`;
      const bytes = await Bun.write(partial, res);
      renameSync(partial, args.output);
      console.log(`wrote ${args.output} (${bytes} bytes)`);
    });
  },
});

export const restoreCommand = defineCommand({
  meta: {
    name: "restore",
    description: "Unpack a `tessera backup` archive into the configured data_dir (empty; the service stopped)",
  },
  args: { archive: { type: "positional", description: "The archive", required: true }, ...configArg },
  async run({ args }) {
    const config = await configFrom(args.config);
    if (config.db_uri)
      throw new CliFailure("tessera: the configured database is PostgreSQL: restore it with pg_restore", EXIT.usage);
    if (!existsSync(args.archive)) throw new CliFailure(`tessera: no file ${args.archive}`, EXIT.usage);
    const dir = config.data_dir;
    if (existsSync(dir) && readdirSync(dir).length > 0)
      throw new CliFailure(
        `tessera: ${dir} is not empty: restore into an empty data_dir (move the current one aside)`,
        EXIT.refused,
      );
    const { openDatabase } = await import("../db/index.ts");
    let database;
    try {
      // Opening unpacks the archive and migrates it (a copy from an older release is brought up to date).
      database = await openDatabase({
        dataDir: dir,
        template: Bun.file(args.archive),
        timeoutSeconds: config.db_timeout,
      });
    } catch (e) {
      rmSync(dir, { recursive: true, force: true });
      throw new CliFailure(`tessera: cannot restore ${args.archive}: ${(e as Error).message}`, EXIT.refused);
    }
    await database.close();
    console.log(`restored ${args.archive} into ${dir}`);
  },
});
