// Policies and their ACL editor. The editor marks each entry the signed-in user may not grant (the
// server's own grant rule, src/domain/acl-grant.ts, run here too), and warns on broad patterns (`#`). The
// API decides: its 403 names the entry it refused.
import type { Policy } from "../../../clients/typescript/index.ts";
import { useState } from "preact/hooks";
import type { Api } from "../api.ts";
import {
  Busy,
  Check,
  ErrorBox,
  Field,
  Notice,
  PagedList,
  Screen,
  confirmAction,
  reloadLists,
  useAction,
  useAsync,
} from "../ui.tsx";
import { detailId, type ScreenProps } from "./index.tsx";

/** Why an ACL entry deserves a second look, or null. */
export function aclWarning(entry: string): string | null {
  const e = entry.replace(/^!/, "");
  if (e === "#" || e === "*") return "matches every access of every service";
  if (/^[^.]+\.#$/.test(e)) return `matches every access of ${e.split(".")[0]}`;
  if (e.includes("#") && !e.endsWith(".#")) return "# in the middle of an entry matches across segments";
  if (e.includes("#")) return "# matches everything below this point";
  return null;
}

export function AclEditor({
  api,
  acl,
  onChange,
  original,
}: {
  api: Api;
  acl: string[];
  original: string[];
  onChange: (acl: string[]) => void;
}) {
  const [entry, setEntry] = useState("");
  const known = new Set(original);
  const add = (e: Event) => {
    e.preventDefault();
    const v = entry.trim();
    if (v && !acl.includes(v)) onChange([...acl, v]);
    setEntry("");
  };
  return (
    <div class="acl-editor">
      <ul class="acl" aria-label="ACL entries">
        {acl.map((a) => {
          const warn = aclWarning(a);
          const blocked = known.has(a) ? !api.grant.mayRevoke(a) : !api.grant.mayGrant(a);
          return (
            <li key={a} class={blocked ? "blocked" : ""}>
              <code>{a}</code>
              {blocked && (
                <span class="tag bad">{known.has(a) ? "you cannot remove this" : "you cannot grant this"}</span>
              )}
              {warn && <span class="tag warn">⚠ {warn}</span>}
              <button type="button" aria-label={`Remove ${a}`} onClick={() => onChange(acl.filter((x) => x !== a))}>
                Remove
              </button>
            </li>
          );
        })}
        {acl.length === 0 && <li>No entry.</li>}
      </ul>
      <div class="inline">
        <label for="acl-entry">New entry</label>
        <input
          id="acl-entry"
          value={entry}
          onInput={(e) => setEntry((e.currentTarget as HTMLInputElement).value)}
          onKeyDown={(e) => e.key === "Enter" && add(e)}
          placeholder="confd.users.read"
        />
        <button type="button" onClick={add}>
          Add entry
        </button>
      </div>
      {entry && aclWarning(entry.trim()) && <p class="tag warn">⚠ {aclWarning(entry.trim())}</p>}
      {entry && !api.grant.mayGrant(entry.trim()) && (
        <p class="tag bad">You cannot grant {entry.trim()}: the API will refuse it.</p>
      )}
    </div>
  );
}

export function PoliciesScreen({ api }: ScreenProps) {
  const act = useAction();
  const [name, setName] = useState("");
  const create = async (e: Event) => {
    e.preventDefault();
    const ok = await act.run(async () => {
      const p = (await api.ops.createPolicy({ body: { name, acl: [] } as never })) as Policy;
      location.hash = `#/policies/${p.uuid}`;
    });
    if (ok) setName("");
  };
  const remove = async (p: Policy) => {
    if (!(await confirmAction(`Delete the policy ${p.name}?`, <p>Users and groups holding it lose its ACL.</p>)))
      return;
    if (
      await act.run(() => api.ops.deletePolicy({ params: { path: { policy: p.uuid } } } as never), `Deleted ${p.name}.`)
    )
      reloadLists();
  };
  return (
    <Screen title="Policies" intro="A policy is a named ACL given to users and groups.">
      <ErrorBox error={act.error} />
      {act.notice && <Notice text={act.notice} />}
      {api.can("auth.policies.create") && (
        <form class="inline panel" onSubmit={(e) => void create(e)} aria-label="New policy">
          <Field label="New policy name" name="name" value={name} onInput={setName} error={act.error} required />
          <button type="submit" class="primary" disabled={act.busy}>
            Create
          </button>
        </form>
      )}
      <PagedList<Policy>
        label="Policies"
        load={(q) => api.ops.listPolicies({ params: { query: { ...q, recurse: true, order: "name" } } })}
        rowKey={(p) => p.uuid}
        columns={[
          { title: "Name", cell: (p) => <a href={`#/policies/${p.uuid}`}>{p.name}</a> },
          { title: "Entries", cell: (p) => String(p.acl?.length ?? 0) },
          {
            title: "Kind",
            cell: (p) => [p.read_only ? "read-only" : "", p.shared ? "shared" : ""].filter(Boolean).join(", "),
          },
          {
            title: "Actions",
            cell: (p) =>
              !p.read_only &&
              api.can("auth.policies.{policy}.delete", { policy: p.uuid }) && (
                <button type="button" class="danger" aria-label={`Delete ${p.name}`} onClick={() => void remove(p)}>
                  Delete
                </button>
              ),
          },
        ]}
      />
    </Screen>
  );
}

export function PolicyScreen({ api, path }: ScreenProps) {
  const uuid = detailId(path);
  const policy = useAsync(
    () => api.ops.getPolicy({ params: { path: { policy: uuid } } } as never) as Promise<Policy>,
    [uuid],
  );
  const p = policy.data;
  return (
    <Screen title={p ? `Policy ${p.name}` : "Policy"}>
      <p>
        <a href="#/policies">← All policies</a>
      </p>
      {policy.loading && <Busy />}
      <ErrorBox error={policy.error} />
      {p && <PolicyForm api={api} policy={p} key={p.uuid} reload={policy.reload} />}
    </Screen>
  );
}

function PolicyForm({ api, policy, reload }: { api: Api; policy: Policy; reload: () => void }) {
  const act = useAction();
  const [form, setForm] = useState({
    name: policy.name ?? "",
    description: policy.description ?? "",
    acl: policy.acl ?? [],
    shared: !!policy.shared,
  });
  const may = !policy.read_only && api.can("auth.policies.{policy}.update", { policy: policy.uuid });
  const save = async (e: Event) => {
    e.preventDefault();
    const body = { name: form.name, description: form.description || null, acl: form.acl, shared: form.shared };
    if (
      await act.run(() => api.ops.updatePolicy({ params: { path: { policy: policy.uuid } }, body } as never), "Saved.")
    )
      reload();
  };
  return (
    <form class="panel" onSubmit={(e) => void save(e)} aria-label="Policy">
      <ErrorBox error={act.error} />
      {act.notice && <Notice text={act.notice} />}
      {policy.read_only && <p class="hint">This policy is managed by the service: read only.</p>}
      <Field
        label="Name"
        name="name"
        value={form.name}
        onInput={(v) => setForm({ ...form, name: v })}
        error={act.error}
      />
      <Field
        label="Description"
        name="description"
        value={form.description}
        onInput={(v) => setForm({ ...form, description: v })}
        error={act.error}
      />
      <Check label="Shared with sub-tenants" checked={form.shared} onChange={(v) => setForm({ ...form, shared: v })} />
      <h2>ACL</h2>
      <AclEditor api={api} acl={form.acl} original={policy.acl ?? []} onChange={(acl) => setForm({ ...form, acl })} />
      {may && (
        <div class="actions">
          <button type="submit" class="primary" disabled={act.busy}>
            Save
          </button>
        </div>
      )}
    </form>
  );
}
