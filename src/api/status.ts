// HEAD /0.1/status (liveness, no auth) and GET /0.1/status (components, top-tenant admins, D8 of docs/wazo-auth-differences.md).
// Every probe is bounded (half of `db_timeout`), so the report comes back in time even when the
// database is frozen; a component that does not answer in time is reported as failing.
import type { AppContext } from "../boot/context.ts";
import { bounded } from "../db/index.ts";
import { DatabaseUnavailable } from "../domain/errors.ts";
import { jsonError } from "../http/error-response.ts";
import { RouteGroup } from "../http/route.ts";

type Component = { status: string } & Record<string, unknown>;

const probeMs = (app: AppContext) => Math.max(100, Math.round(app.config.db_timeout * 500));

async function databaseStatus(app: AppContext): Promise<Component> {
  const ok = await app.database.ping(probeMs(app));
  return { status: ok ? "ok" : "fail", kind: app.database.kind, listening: app.database.listening() };
}

async function providerStatus(app: AppContext, status: () => Promise<Component>): Promise<Component> {
  let result: Component = { status: "fail", error: "no answer in time" };
  await bounded(async () => (result = await status()), probeMs(app));
  return result;
}

export async function collectStatus(app: AppContext): Promise<Record<string, Component>> {
  const [database, ...provided] = await Promise.all([
    databaseStatus(app),
    ...app.statusProviders.map((p) => providerStatus(app, () => p.status())),
  ]);
  const status: Record<string, Component> = { rest_api: { status: "ok" }, database: database! };
  const plugins: Record<string, unknown> = {};
  for (const p of app.plugins.report) {
    plugins[p.name] = { status: p.status, kind: p.kind, ...(p.error ? { error: p.error } : {}) };
  }
  status.plugins = { status: app.plugins.report.some((p) => p.status !== "ok") ? "fail" : "ok", ...plugins };
  for (const [i, p] of app.statusProviders.entries()) status[p.name] = provided[i]!;
  return status;
}

export function statusRoutes(): RouteGroup {
  return new RouteGroup("status")
    .head(
      "/status",
      {
        summary: "Liveness: 200 when the service and its database are up, else 503",
        responses: { 200: "Up", 503: "Down" },
      },
      async ({ c, app }) => {
        const ok = await app.database.ping(probeMs(app));
        return c.body(null, ok ? 200 : 503);
      },
    )
    .get(
      "/status",
      {
        summary: "Status of every component (technical details: top-tenant administrators only)",
        acl: "auth.status.read",
        topTenantOnly: true,
        noTenant: true,
        responses: {
          200: "Components, each with a status",
          401: "Invalid token or not a top-tenant token",
          403: "Missing auth.status.read",
          503: "The database is down so the caller cannot be authenticated: `details` holds what is known without it",
        },
        // Without the database nobody can be authenticated (a token may have been revoked meanwhile),
        // so the answer is the 503 error body carrying what anyone may know: the database is down.
        whenDatabaseDown: async (c, app) => {
          const error = new DatabaseUnavailable(
            "status",
            "The database is unavailable; the caller cannot be authenticated",
          );
          Object.assign(error.details, { rest_api: { status: "ok" }, database: { status: "fail" } });
          app.log.error("status asked while the database is unavailable", {});
          return jsonError(c, error);
        },
      },
      async ({ c, app }) => c.json(await collectStatus(app)),
    );
}
