// A backup of the embedded database taken through the running service: the process that holds the
// data directory (and its lock) is the only one that can copy it consistently without a stop.
import type { AppContext } from "../../boot/context.ts";
import type { Caller } from "../../domain/caller.ts";
import { ApiError } from "../../domain/errors.ts";
import { recordAudit } from "../audit/record.ts";

/** The data directory as a gzip'd tar (restored by `tessera restore`); PostgreSQL: 409, use pg_dump. */
export async function backupEmbeddedDatabase(app: AppContext, caller: Caller): Promise<Uint8Array<ArrayBuffer>> {
  if (!app.database.dump)
    throw new ApiError(
      409,
      "backup-unsupported",
      "The database is PostgreSQL: back it up with pg_dump or continuous archiving (docs/operations.md, Backups)",
      "backup",
    );
  const archive = await app.database.dump();
  await recordAudit(app, app.db, caller, { action: "database.backup" });
  app.log.info("database backup taken", { bytes: archive.byteLength });
  return archive;
}
