// Webhooks of the tenant (docs/webhooks.md): list, create (the signing secret is shown once), send a test
// ping, rotate the secret, delete; a webhook's delivery log (newest first) with redelivery.
import { useState } from "preact/hooks";
import { ErrorBox, Field, Notice, PagedList, Screen, confirmAction, reloadLists, useAction } from "../ui.tsx";
import type { ScreenProps } from "./index.tsx";

interface Webhook {
  uuid: string;
  url: string;
  events: string[];
  enabled: boolean;
  disabled_reason: string | null;
  description: string;
}

interface Delivery {
  uuid: string;
  event_type: string | null;
  status: "pending" | "delivered" | "failed" | "dropped";
  attempts: number;
  response_status_code: number | null;
  error: string | null;
  latency_ms: number | null;
  created_at: string;
}

const EMPTY_FORM = { url: "", events: "", description: "" };

const when = (iso: string) => new Date(iso).toLocaleString();

/** A webhook's delivery log: what was sent, how it went, and a redelivery of any entry. */
function DeliveryLog({ api, webhook, onClose }: { api: ScreenProps["api"]; webhook: Webhook; onClose: () => void }) {
  const act = useAction();
  const path = { webhook_uuid: webhook.uuid };
  const redeliver = async (d: Delivery) => {
    const ok = await act.run(
      () => api.ops.createWebhookDeliveryRedeliver({ params: { path: { ...path, delivery_uuid: d.uuid } } }),
      `Delivery of ${d.event_type ?? "the event"} queued again.`,
    );
    if (ok) reloadLists();
  };
  const mayRedeliver = api.can("auth.webhooks.{webhook_uuid}.deliveries.create", path);
  return (
    <section class="panel" aria-label={`Deliveries to ${webhook.url}`}>
      <h2>
        Deliveries to <code>{webhook.url}</code>
      </h2>
      <ErrorBox error={act.error} />
      {act.notice && <Notice text={act.notice} />}
      <div class="actions">
        <button type="button" onClick={reloadLists}>
          Refresh
        </button>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      <PagedList<Delivery>
        label={`Delivery log of ${webhook.url}`}
        searchable={false}
        deps={[webhook.uuid]}
        load={(q) =>
          api.ops.listWebhookDeliveries({
            params: { path, query: { limit: q.limit, offset: q.offset, direction: "desc" } },
          }) as never
        }
        rowKey={(d) => d.uuid}
        columns={[
          { title: "Sent", cell: (d) => when(d.created_at) },
          { title: "Event", cell: (d) => <code>{d.event_type ?? "—"}</code> },
          { title: "Status", cell: (d) => d.status },
          { title: "Attempts", cell: (d) => String(d.attempts) },
          {
            title: "Answer",
            cell: (d) =>
              [d.response_status_code ?? "", d.latency_ms == null ? "" : `${d.latency_ms} ms`, d.error ?? ""]
                .filter((x) => x !== "")
                .join(" · ") || "—",
          },
          {
            title: "Actions",
            cell: (d) =>
              mayRedeliver &&
              d.status !== "pending" && (
                <button type="button" aria-label={`Redeliver ${d.uuid}`} onClick={() => void redeliver(d)}>
                  Redeliver
                </button>
              ),
          },
        ]}
      />
    </section>
  );
}

export function WebhooksScreen({ api }: ScreenProps) {
  const act = useAction();
  const [open, setOpen] = useState(false);
  const [form, setForm] = useState(EMPTY_FORM);
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);
  const [log, setLog] = useState<Webhook | null>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    const body = {
      url: form.url,
      events: form.events.split(/[\s,]+/).filter(Boolean),
      description: form.description,
    };
    await act.run(async () => {
      const w = (await api.ops.createWebhook({ body: body as never })) as unknown as Webhook & { secret: string };
      setSecret({ url: w.url, secret: w.secret });
      setOpen(false);
      setForm(EMPTY_FORM);
      reloadLists();
    }, `Created the webhook of ${form.url}.`);
  };
  const path = (w: Webhook) => ({ params: { path: { webhook_uuid: w.uuid } } });
  const rotate = async (w: Webhook) => {
    if (!(await confirmAction(`Rotate the secret of ${w.url}?`, <p>The old secret keeps signing for a while.</p>)))
      return;
    await act.run(async () => {
      const r = (await api.ops.createWebhookSecret(path(w))) as unknown as { secret: string };
      setSecret({ url: w.url, secret: r.secret });
    }, "New secret made.");
  };
  const remove = async (w: Webhook) => {
    if (!(await confirmAction(`Delete the webhook of ${w.url}?`, <p>Its pending deliveries and log go with it.</p>)))
      return;
    if (await act.run(() => api.ops.deleteWebhook(path(w)), "Deleted.")) {
      if (log?.uuid === w.uuid) setLog(null);
      reloadLists();
    }
  };
  return (
    <Screen title="Webhooks" intro="HTTP endpoints that receive the events of this tenant and its sub-tenants, signed.">
      <ErrorBox error={open ? null : act.error} />
      {act.notice && <Notice text={act.notice} />}
      {secret && (
        <div class="panel secret" role="status">
          <p>
            The signing secret of <code>{secret.url}</code>, shown only now: copy it into the receiver.
          </p>
          <code class="block">{secret.secret}</code>
        </div>
      )}
      {api.can("auth.webhooks.create") &&
        (open ? (
          <form class="panel" onSubmit={(e) => void create(e)} aria-label="New webhook">
            <h2>New webhook</h2>
            <ErrorBox error={act.error} />
            <Field
              label="URL"
              name="url"
              value={form.url}
              onInput={(v) => setForm({ ...form, url: v })}
              error={act.error}
              required
            />
            <Field
              label="Events (names or prefixes ending in *, separated by spaces)"
              name="events"
              value={form.events}
              onInput={(v) => setForm({ ...form, events: v })}
              error={act.error}
              required
            />
            <Field
              label="Description"
              name="description"
              value={form.description}
              onInput={(v) => setForm({ ...form, description: v })}
              error={act.error}
            />
            <div class="actions">
              <button type="submit" class="primary" disabled={act.busy}>
                Create
              </button>
              <button type="button" onClick={() => setOpen(false)}>
                Cancel
              </button>
            </div>
          </form>
        ) : (
          <button
            type="button"
            class="primary"
            onClick={() => {
              setSecret(null);
              setOpen(true);
            }}
          >
            New webhook
          </button>
        ))}
      <PagedList<Webhook>
        label="Webhooks"
        searchable={false}
        load={(q) => api.ops.listWebhooks({ params: { query: { ...q, recurse: true } } }) as never}
        rowKey={(w) => w.uuid}
        columns={[
          { title: "URL", cell: (w) => <code>{w.url}</code> },
          { title: "Events", cell: (w) => w.events.join(" ") },
          {
            title: "State",
            cell: (w) => (w.enabled ? "enabled" : <span title={w.disabled_reason ?? ""}>disabled</span>),
          },
          { title: "Description", cell: (w) => w.description },
          {
            title: "Actions",
            cell: (w) => (
              <>
                {api.can("auth.webhooks.{webhook_uuid}.deliveries.read", { webhook_uuid: w.uuid }) && (
                  <button type="button" aria-label={`Deliveries to ${w.url}`} onClick={() => setLog(w)}>
                    Deliveries
                  </button>
                )}
                {api.can("auth.webhooks.{webhook_uuid}.ping.create", { webhook_uuid: w.uuid }) && (
                  <button
                    type="button"
                    aria-label={`Ping ${w.url}`}
                    onClick={() => void act.run(() => api.ops.createWebhookPing(path(w)), "Test event queued.")}
                  >
                    Ping
                  </button>
                )}
                {api.can("auth.webhooks.{webhook_uuid}.secret.update", { webhook_uuid: w.uuid }) && (
                  <button type="button" aria-label={`Rotate the secret of ${w.url}`} onClick={() => void rotate(w)}>
                    Rotate secret
                  </button>
                )}
                {api.can("auth.webhooks.{webhook_uuid}.delete", { webhook_uuid: w.uuid }) && (
                  <button type="button" class="danger" aria-label={`Delete ${w.url}`} onClick={() => void remove(w)}>
                    Delete
                  </button>
                )}
              </>
            ),
          },
        ]}
      />
      {log && <DeliveryLog api={api} webhook={log} onClose={() => setLog(null)} />}
    </Screen>
  );
}
