// GET/PATCH /0.1/config (wazo-auth's config and status API) with secrets masked (D12 of docs/wazo-auth-differences.md).
import { z } from "zod";
import { maskSecrets } from "../config/config.ts";
import type { AppContext } from "../boot/context.ts";
import { RouteGroup } from "../http/route.ts";
import { changesOf, recordAudit } from "../services/audit/record.ts";

const patchSchema = z
  .array(
    z.strictObject({
      op: z.literal("replace"),
      path: z.enum(["/debug", "/profiling_enabled"]),
      value: z.boolean(),
    }),
  )
  .min(1);

function visibleConfig(app: AppContext) {
  return {
    ...(maskSecrets(app.config) as Record<string, unknown>),
    loaded_plugins: app.plugins.report.filter((p) => p.status === "ok").map((p) => p.name),
  };
}

export function configRoutes(): RouteGroup {
  return new RouteGroup("config")
    .get(
      "/config",
      {
        summary: "The effective configuration, secrets masked",
        acl: "auth.config.read",
        topTenantOnly: true,
        responses: {
          200: "Configuration",
          401: "Invalid token or not a top-tenant token",
          403: "Missing auth.config.read",
        },
      },
      ({ c, app }) => c.json(visibleConfig(app)),
    )
    .patch(
      "/config",
      {
        summary: "Change `debug` or `profiling_enabled` at run time (not persisted)",
        acl: "auth.config.update",
        topTenantOnly: true,
        body: patchSchema,
        responses: {
          200: "Configuration after the change",
          400: "Invalid patch",
          401: "Invalid token or not a top-tenant token",
          403: "Missing auth.config.update",
        },
      },
      async ({ c, app, caller, body }) => {
        const before = { debug: app.config.debug, profiling_enabled: app.config.profiling_enabled };
        for (const op of body) {
          if (op.path === "/debug") {
            app.config.debug = op.value;
            app.log.level = op.value ? "debug" : app.config.log_level;
          } else {
            app.config.profiling_enabled = op.value;
          }
        }
        const after = { debug: app.config.debug, profiling_enabled: app.config.profiling_enabled };
        await recordAudit(app, app.db, caller, {
          action: "config.update",
          target: { kind: "config", tenantUuid: app.topTenantUuid },
          changes: changesOf(before, after),
        });
        return c.json(visibleConfig(app));
      },
    );
}
