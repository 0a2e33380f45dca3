// HEAD /0.1/status (liveness, no auth) and GET /0.1/status (components, top-tenant admins, D8).
import type { AppContext } from "../context.ts";
import { RouteGroup } from "../http/route.ts";

export async function collectStatus(app: AppContext): Promise<Record<string, { status: string } & Record<string, unknown>>> {
  const status: Record<string, { status: string } & Record<string, unknown>> = {
    rest_api: { status: "ok" },
    database: { status: (await app.database.ping()) ? "ok" : "fail", kind: app.database.kind },
  };
  const plugins: Record<string, unknown> = {};
  for (const p of app.plugins.report) {
    plugins[p.name] = { status: p.status, kind: p.kind, ...(p.error ? { error: p.error } : {}) };
  }
  status.plugins = { status: app.plugins.report.some((p) => p.status !== "ok") ? "fail" : "ok", ...plugins };
  for (const provider of app.statusProviders) status[provider.name] = await provider.status();
  return status;
}

/** Components that must be up for the service to answer (plugins may fail without taking it down). */
const ESSENTIAL = ["rest_api", "database"];

export function statusRoutes(): RouteGroup {
  return new RouteGroup("status")
    .head("/status", { summary: "Liveness: 200 when the service and its database are up, else 503", responses: { 200: "Up", 503: "Down" } }, async ({ c, app }) => {
      const status = await collectStatus(app);
      const ok = ESSENTIAL.every((k) => status[k]?.status === "ok");
      return c.body(null, ok ? 200 : 503);
    })
    .get(
      "/status",
      {
        summary: "Status of every component (technical details: top-tenant administrators only)",
        acl: "auth.status.read",
        topTenantOnly: true,
        responses: { 200: "Components, each with a status", 401: "Invalid token or not a top-tenant token", 403: "Missing auth.status.read" },
      },
      async ({ c, app }) => c.json(await collectStatus(app)),
    );
}
