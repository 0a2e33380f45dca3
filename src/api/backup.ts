// GET /0.1/backup: the embedded database, copied while it serves (docs/operations.md, "Backups").
import { z } from "zod";
import { RouteGroup } from "../http/route.ts";
import { backupEmbeddedDatabase } from "../services/operations/backup.ts";

export function backupRoutes(): RouteGroup {
  return new RouteGroup("backup").get(
    "/backup",
    {
      operationId: "backupDatabase",
      summary: "A consistent copy of the embedded database's data directory (gzip'd tar), taken while it serves",
      acl: "auth.backup.read",
      topTenantOnly: true,
      noTenant: true,
      responses: {
        200: {
          description: "The archive (`tessera restore FILE`)",
          schema: z.string(),
          contentType: "application/gzip",
        },
        401: "Invalid token or not a top-tenant token",
        409: "The database is PostgreSQL: use pg_dump",
      },
    },
    async ({ app, caller }) =>
      new Response(await backupEmbeddedDatabase(app, caller), {
        headers: {
          "Content-Type": "application/gzip",
          "Content-Disposition": 'attachment; filename="tessera-data.tar.gz"',
          "Cache-Control": "no-store",
        },
      }),
  );
}
