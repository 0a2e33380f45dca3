// The audit trail (issue 26, docs/audit.md): GET /0.1/audit, within the caller's tenants (D9 of docs/wazo-auth-differences.md).
import { z } from "zod";
import { listQuery } from "../domain/collection.ts";
import { RouteGroup } from "../http/route.ts";
import { listAudit, parseAuditFilters } from "../services/audit/query.ts";

const auditList = listQuery({
  order: ["time"],
  filters: ["actor_uuid", "target_uuid", "target_kind", "action", "outcome", "since", "until", "after"] as const,
  dateTimeFilters: ["since", "until"],
});

const nullableString = z.string().nullable();
/** The answer's shape (the console relies on it; docs/audit.md). */
const auditPage = z.object({
  items: z.array(
    z.object({
      uuid: z.string(),
      time: z.string().describe("ISO 8601, UTC"),
      actor: z.object({
        user_uuid: nullableString,
        session_uuid: nullableString,
        tenant_uuid: nullableString,
        address: nullableString,
        user_agent: nullableString,
      }),
      action: z.string(),
      target: z.object({ kind: nullableString, uuid: nullableString, tenant_uuid: nullableString }),
      outcome: z.string(),
      changes: z.array(z.object({ field: z.string(), old: z.unknown(), new: z.unknown() })),
    }),
  ),
  total: z.number(),
  filtered: z.number(),
  filtered_capped: z.boolean().optional(),
});

export function auditRoutes(): RouteGroup {
  return new RouteGroup("audit").get(
    "/audit",
    {
      operationId: "listAudit",
      summary: "Audit entries of the scoping tenant (and below with `recurse`), newest first",
      description:
        "Filters: `actor_uuid`, `target_uuid`, `target_kind`, `action` (exact, or a prefix ending in `*`: `user.*`), " +
        "`outcome`, `since` and `until` (ISO 8601 / RFC 3339, years 0001–9999; `since` inclusive, `until` exclusive), `after` (an entry's uuid: " +
        "the page that follows it, for paging deep or following new entries). `direction=asc` lists oldest first. " +
        "`filtered` counts at most 10,000 matches (then `filtered_capped` is true).",
      acl: "auth.audit.read",
      query: auditList,
      responses: {
        200: { description: "`{items, filtered, total}`", schema: auditPage },
        400: "Invalid list parameter or filter",
      },
    },
    async ({ c, app, caller, query }) =>
      c.json(await listAudit(app, caller, query, parseAuditFilters(query.filters, c.req.query("direction")))),
  );
}
