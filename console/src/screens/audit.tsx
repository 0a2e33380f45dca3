// The audit trail (GET /0.1/audit, ACL auth.audit.read, docs/audit.md), with its filters and
// paging, through the typed client; a server without the route answers 404, shown as "not
// available on this server".
import { useState } from "preact/hooks";
import { TesseraError } from "../api.ts";
import { ErrorBox, PagedList, RecordLink, Screen, UserLink } from "../ui.tsx";
import type { ScreenProps } from "./index.tsx";
// The route's item, as the service defines it (a type only: nothing of the service is bundled).
import type { AuditItem as AuditEntry } from "../../../src/services/audit/item.ts";

// The route's filters (docs/audit.md): `action` is a name or a prefix ending in `*`; `since` is
// inclusive and `until` exclusive, ISO 8601 (the page's local time is sent in UTC).
const FILTERS = [
  ["action", "Action", "user.update, or a prefix: user.*", "text"],
  ["actor_uuid", "Actor (user UUID)", "", "text"],
  ["target_kind", "Target kind", "user, tenant, policy…", "text"],
  ["target_uuid", "Target UUID", "", "text"],
  ["outcome", "Outcome", "success, or a refusal's class", "text"],
  ["since", "From (local time)", "", "datetime-local"],
  ["until", "Until (local time)", "", "datetime-local"],
] as const;
type FilterKey = (typeof FILTERS)[number][0];

/** The query the route takes: empty filters left out, local times as UTC instants (RFC 3339 §5.6). */
function toQuery(filters: Record<FilterKey, string>): Record<string, string> {
  const q: Record<string, string> = {};
  for (const [k, , , type] of FILTERS) {
    const v = filters[k].trim();
    if (v) q[k] = type === "datetime-local" ? new Date(v).toISOString() : v;
  }
  return q;
}

export function AuditScreen({ api }: ScreenProps) {
  const empty = Object.fromEntries(FILTERS.map(([k]) => [k, ""])) as Record<FilterKey, string>;
  const [draft, setDraft] = useState(empty);
  const [filters, setFilters] = useState(empty);
  const [missing, setMissing] = useState(false);
  const load = async (q: { search: string; limit: number; offset: number }) => {
    try {
      const page = await api.ops.listAudit({
        params: {
          query: { ...toQuery(filters), ...q, order: "time", direction: "desc", recurse: true },
        },
      });
      // `filtered` stops counting at 10,000 matches (filtered_capped): the pager says "at least".
      return page as { items: AuditEntry[]; total: number; filtered: number; filtered_capped?: boolean };
    } catch (e) {
      // A server without the route (older than the audit trail) answers 404.
      if (e instanceof TesseraError && e.status === 404) {
        setMissing(true);
        return { items: [], total: 0, filtered: 0 };
      }
      throw e;
    }
  };
  if (missing)
    return (
      <Screen title="Audit trail">
        <ErrorBox
          error={{
            message: "The audit trail is not available on this server (GET /0.1/audit answered 404).",
            fields: {},
          }}
        />
      </Screen>
    );
  return (
    <Screen title="Audit trail" intro="Who did what, when, newest first.">
      <form
        class="panel filters"
        aria-label="Filters"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(draft);
        }}
      >
        {FILTERS.map(([k, label, hint, type]) => (
          <div class="field" key={k}>
            <label for={`audit-${k}`}>{label}</label>
            <input
              id={`audit-${k}`}
              name={k}
              type={type}
              value={draft[k]}
              placeholder={hint || undefined}
              onInput={(e) => setDraft({ ...draft, [k]: (e.currentTarget as HTMLInputElement).value })}
            />
          </div>
        ))}
        <div class="actions">
          <button type="submit" class="primary">
            Apply filters
          </button>
          <button
            type="button"
            onClick={() => {
              setDraft(empty);
              setFilters(empty);
            }}
          >
            Clear
          </button>
        </div>
      </form>
      <PagedList<AuditEntry>
        label="Audit entries"
        load={load}
        deps={[filters]}
        rowKey={(a) => a.uuid}
        columns={[
          {
            title: "Time",
            cell: (a) => (
              <time class="nowrap" dateTime={a.time}>
                {a.time.replace("T", " ").slice(0, 19)}
              </time>
            ),
          },
          {
            title: "Actor",
            cell: (a) =>
              a.actor.user_uuid ? <UserLink api={api} uuid={a.actor.user_uuid} /> : (a.actor.address ?? "—"),
          },
          { title: "Action", cell: (a) => <code class="nowrap">{a.action}</code> },
          {
            title: "Target",
            // By name where the administrator may read the record (the uuid in the link's title).
            cell: (a) => (
              <>
                {a.target.kind ?? ""}{" "}
                {a.target.uuid && <RecordLink api={api} kind={a.target.kind ?? ""} uuid={a.target.uuid} />}
              </>
            ),
          },
          { title: "Outcome", cell: (a) => <span class={a.outcome === "success" ? "ok" : "bad"}>{a.outcome}</span> },
          {
            title: "Changes",
            cell: (a) =>
              a.changes.length > 0 && (
                <ul class="plain changes">
                  {a.changes.map((c) => (
                    <li key={c.field}>
                      {c.field}: {JSON.stringify(c.old)} → {JSON.stringify(c.new)}
                    </li>
                  ))}
                </ul>
              ),
          },
        ]}
      />
    </Screen>
  );
}
