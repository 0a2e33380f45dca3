// Webhooks of the tenant (docs/webhooks.md): list, create (the signing secret is shown once), send a test
// ping, rotate the secret, delete.
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

const EMPTY_FORM = { url: "", events: "", description: "" };

export function WebhooksScreen({ api }: ScreenProps) {
  const act = useAction();
  const [open, setOpen] = useState(false);
  const [form, setForm] = useState(EMPTY_FORM);
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);
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
    if (await act.run(() => api.ops.deleteWebhook(path(w)), "Deleted.")) reloadLists();
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
    </Screen>
  );
}
