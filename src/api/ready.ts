// GET|HEAD /0.1/ready: readiness, for a load balancer's health check (no authentication). Distinct
// from liveness (HEAD /0.1/status, "the process and its database answer"): an instance is ready to
// take traffic when its database answers, the schema holds at least the migrations this code was
// built with (a newer schema is fine: migrations are expand/contract, so the previous version runs
// on the next one's schema during a rolling upgrade), and cache invalidation is listening — an
// instance that may miss revocations would read every token check from the database (or refuse it).
// A draining instance (after SIGTERM) is not ready either; main.ts answers that before the router.
import { z } from "zod";
import journal from "../../drizzle/meta/_journal.json";
import type { AppContext } from "../boot/context.ts";
import { bounded, execRows } from "../db/index.ts";
import { sql } from "drizzle-orm";
import { ServiceUnavailable } from "../domain/errors.ts";
import { jsonError } from "../http/error-response.ts";
import { RouteGroup } from "../http/route.ts";

/** `when` of the newest migration this code carries (drizzle records it as `created_at`). */
const NEWEST_MIGRATION = Math.max(...journal.entries.map((e) => e.when));

type Check = "ok" | "fail";
export interface Readiness {
  database: Check;
  migrations: Check;
  cache_invalidation: Check;
}

const probeMs = (app: AppContext) => Math.max(100, Math.round(app.config.db_timeout * 500));

export async function readiness(app: AppContext): Promise<Readiness> {
  let newest: number | null = null;
  const reached = await bounded(async () => {
    const rows = await execRows<{ newest: string | number | null }>(
      app.db,
      sql`select max(created_at) as newest from "drizzle"."__drizzle_migrations"`,
    );
    newest = rows[0]?.newest == null ? null : Number(rows[0].newest);
  }, probeMs(app));
  return {
    database: reached ? "ok" : "fail",
    migrations: reached && newest !== null && newest >= NEWEST_MIGRATION ? "ok" : "fail",
    cache_invalidation: app.database.listening() ? "ok" : "fail",
  };
}

const WHAT: Record<keyof Readiness, string> = {
  database: "the database is unreachable",
  migrations: "the database lacks this version's migrations",
  cache_invalidation: "cache invalidation (LISTEN) is not listening",
};

/** The 503 of an instance that is not ready, naming each failing check (also used while draining). */
export function notReady(
  failing: Partial<Record<keyof Readiness | "draining", Check>>,
  message: string,
): ServiceUnavailable {
  const error = new ServiceUnavailable("ready", message, "not-ready");
  Object.assign(error.details, failing);
  return error;
}

const readyBody = z.object({
  database: z.literal("ok"),
  migrations: z.literal("ok"),
  cache_invalidation: z.literal("ok"),
});

export function readyRoutes(): RouteGroup {
  const group = new RouteGroup("ready");
  const answer = async ({ c, app }: { c: Parameters<typeof jsonError>[0]; app: AppContext }) => {
    const checks = await readiness(app);
    const failing = (Object.keys(checks) as (keyof Readiness)[]).filter((k) => checks[k] !== "ok");
    if (failing.length === 0) return c.req.method === "HEAD" ? c.body(null, 200) : c.json(checks, 200);
    return jsonError(c, notReady(checks, `Not ready: ${failing.map((k) => WHAT[k]).join("; ")}`));
  };
  const spec = {
    summary:
      "Readiness (load balancers): 200 when the database answers, its migrations are applied and cache invalidation is listening; else 503 naming what is not",
    responses: {
      200: { description: "Ready: every check is ok", schema: readyBody },
      503: "Not ready: `details` names each check (`database`, `migrations`, `cache_invalidation`, or `draining`) and its state",
    },
  };
  return group.head("/ready", spec, answer).get("/ready", spec, answer);
}
