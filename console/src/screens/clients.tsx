// OpenID Connect clients (relying parties) of the tenant: list, create (the secret is shown once),
// delete.
import { useState } from "preact/hooks";
import { CLIENT_ID } from "../auth.ts";
import {
  Check,
  ErrorBox,
  Field,
  Notice,
  PagedList,
  Screen,
  confirmAction,
  reloadLists,
  shortId,
  useAction,
} from "../ui.tsx";
import type { ScreenProps } from "./index.tsx";

interface Client {
  client_id: string;
  name: string;
  client_type: string;
  redirect_uris: string[];
  /** Plain http redirect URIs off loopback allowed (development only). */
  allow_insecure_redirects: boolean;
  tenant_uuid: string;
}

const EMPTY_FORM = { name: "", client_type: "confidential", redirect_uris: "", allow_insecure_redirects: false };

export function ClientsScreen({ api }: ScreenProps) {
  const act = useAction();
  const [open, setOpen] = useState(false);
  const [form, setForm] = useState(EMPTY_FORM);
  const [secret, setSecret] = useState<{ id: string; secret: string } | null>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    const body = {
      name: form.name,
      client_type: form.client_type,
      redirect_uris: form.redirect_uris.split(/\s+/).filter(Boolean),
      post_logout_redirect_uris: [],
      allow_insecure_redirects: form.allow_insecure_redirects,
    };
    await act.run(async () => {
      const c = (await api.ops.createOidcClient({ body: body as never })) as unknown as Client & {
        client_secret?: string;
      };
      setSecret(c.client_secret ? { id: c.client_id, secret: c.client_secret } : null);
      setOpen(false);
      setForm(EMPTY_FORM);
      reloadLists();
    }, `Created ${form.name}.`);
  };
  const remove = async (c: Client) => {
    const self = c.client_id === CLIENT_ID;
    if (
      !(await confirmAction(
        `Delete the client ${c.name}?`,
        <p>
          {self
            ? "This is the console's own client: the service registers it again at its next start."
            : "Its users can no longer sign in through it."}
        </p>,
      ))
    )
      return;
    if (
      await act.run(
        () => api.ops.deleteOidcClient({ params: { path: { oidc_client_id: c.client_id } } }),
        `Deleted ${c.name}.`,
      )
    )
      reloadLists();
  };
  return (
    <Screen title="OpenID Connect clients" intro="Applications that sign users in through Tessera.">
      <ErrorBox error={open ? null : act.error} />
      {act.notice && <Notice text={act.notice} />}
      {secret && (
        <div class="panel secret" role="status">
          <p>
            The secret of <code>{secret.id}</code>, shown only now: copy it into the application.
          </p>
          <code class="block">{secret.secret}</code>
        </div>
      )}
      {api.can("auth.oidc.clients.create") &&
        (open ? (
          <form class="panel" onSubmit={(e) => void create(e)} aria-label="New client">
            <h2>New client</h2>
            <ErrorBox error={act.error} />
            <Field
              label="Name"
              name="name"
              value={form.name}
              onInput={(v) => setForm({ ...form, name: v })}
              error={act.error}
              required
            />
            <div class="field">
              <label for="client-type">Type</label>
              <select
                id="client-type"
                value={form.client_type}
                onChange={(e) => setForm({ ...form, client_type: (e.currentTarget as HTMLSelectElement).value })}
              >
                <option value="confidential">confidential (a server with a secret)</option>
                <option value="public">public (a browser or mobile app, PKCE)</option>
              </select>
            </div>
            <Field
              label="Redirect URIs (one a line)"
              name="redirect_uris"
              multiline
              value={form.redirect_uris}
              onInput={(v) => setForm({ ...form, redirect_uris: v })}
              error={act.error}
            />
            <Check
              name="allow_insecure_redirects"
              label="Allow plain http redirect URIs (development only; 127.0.0.1 and [::1] need no such permission)"
              checked={form.allow_insecure_redirects}
              onChange={(v) => setForm({ ...form, allow_insecure_redirects: v })}
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
          <button type="button" class="primary" onClick={() => (setSecret(null), setOpen(true))}>
            New client
          </button>
        ))}
      <PagedList<Client>
        label="Clients"
        load={(q) => api.ops.listOidcClients({ params: { query: { ...q, recurse: true } } }) as never}
        rowKey={(c) => c.client_id}
        columns={[
          { title: "Name", cell: (c) => c.name },
          { title: "Client ID", cell: (c) => <code title={c.client_id}>{shortId(c.client_id)}</code> },
          { title: "Type", cell: (c) => c.client_type },
          {
            title: "Redirect URIs",
            cell: (c) => (
              <>
                {c.redirect_uris.join(" ")}
                {c.allow_insecure_redirects && <small class="hint"> (plain http allowed)</small>}
              </>
            ),
          },
          {
            title: "Actions",
            cell: (c) =>
              api.can("auth.oidc.clients.{oidc_client_id}.delete", { oidc_client_id: c.client_id }) && (
                <button type="button" class="danger" aria-label={`Delete ${c.name}`} onClick={() => void remove(c)}>
                  Delete
                </button>
              ),
          },
        ]}
      />
    </Screen>
  );
}
