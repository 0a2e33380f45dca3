// The tenant tree below the signed-in user's tenant: browse, create a sub-tenant, rename, move,
// delete (the API explains a refusal: a tenant with users or sub-tenants, or one's own tenant).
import type { Tenant } from "../../../clients/typescript/index.ts";
import { useEffect, useRef, useState } from "preact/hooks";
import {
  Busy,
  ErrorBox,
  Field,
  Notice,
  Screen,
  confirmAction,
  giveFocusBack,
  markFirstList,
  useAction,
  useAsync,
} from "../ui.tsx";
import type { ScreenProps } from "./index.tsx";

/** Every tenant, page by page; `progress` hears how many have come so far (a long tree shows it). */
async function allTenants(api: ScreenProps["api"], progress: (n: number) => void): Promise<Tenant[]> {
  const out: Tenant[] = [];
  for await (const t of api.client.paginate("listTenants", { params: { query: { recurse: true, order: "name" } } })) {
    out.push(t);
    if (out.length % 100 === 0) progress(out.length);
  }
  return out;
}

export function TenantsScreen({ api }: ScreenProps) {
  const [loaded, setLoaded] = useState(0);
  const list = useAsync(() => allTenants(api, setLoaded), []);
  const act = useAction();
  const [editing, setEditing] = useState<{ tenant: Tenant; mode: "rename" | "move" | "create" } | null>(null);
  const [name, setName] = useState("");
  const [target, setTarget] = useState("");
  const [folded, setFolded] = useState<Set<string>>(new Set());
  // Keyboard: the form takes the focus when it opens and gives it back to the button that opened it.
  const opener = useRef<HTMLElement | null>(null);
  const form = useRef<HTMLFormElement>(null);
  const editKey = editing && `${editing.mode}:${editing.tenant.uuid}`;
  useEffect(() => {
    if (editKey) form.current?.querySelector<HTMLElement>("input, select")?.focus();
  }, [editKey]);
  const close = () => {
    setEditing(null);
    giveFocusBack(opener.current);
  };
  const toggle = (uuid: string) => {
    const next = new Set(folded);
    if (!next.delete(uuid)) next.add(uuid);
    setFolded(next);
  };
  const tenants = list.data ?? [];
  useEffect(() => {
    if (list.data) markFirstList();
  }, [list.data]);
  const byParent = new Map<string, Tenant[]>();
  const uuids = new Set(tenants.map((t) => t.uuid));
  for (const t of tenants) {
    const key = t.parent_uuid && uuids.has(t.parent_uuid) && t.parent_uuid !== t.uuid ? t.parent_uuid : "";
    byParent.set(key, [...(byParent.get(key) ?? []), t]);
  }
  const start = (tenant: Tenant, mode: "rename" | "move" | "create") => {
    opener.current = document.activeElement as HTMLElement | null;
    act.setError(null);
    setEditing({ tenant, mode });
    setName(mode === "rename" ? (tenant.name ?? "") : "");
    setTarget("");
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!editing) return;
    const t = editing.tenant;
    const ok =
      editing.mode === "rename"
        ? await act.run(
            () =>
              api.ops.updateTenant({
                params: { path: { tenant_uuid: t.uuid } },
                body: {
                  name,
                  contact: t.contact ?? null,
                  phone: t.phone ?? null,
                  domain_names: t.domain_names ?? [],
                  address: t.address ?? {},
                  default_authentication_method: t.default_authentication_method,
                } as never,
              }),
            `Renamed to ${name}.`,
          )
        : editing.mode === "move"
          ? await act.run(
              () => api.ops.setTenantParent({ params: { path: { tenant_uuid: t.uuid, parent_tenant_uuid: target } } }),
              "Moved.",
            )
          : await act.run(
              () => api.client.withTenant(t.uuid).ops.createTenant({ body: { name } as never }),
              `Created ${name}.`,
            );
    if (ok) {
      close();
      list.reload();
    }
  };
  const remove = async (t: Tenant) => {
    if (
      !(await confirmAction(
        `Delete the tenant ${t.name}?`,
        <p>
          Its policies, groups and configuration go with it. A tenant that still has users or sub-tenants is refused.
        </p>,
      ))
    )
      return;
    if (await act.run(() => api.ops.deleteTenant({ params: { path: { tenant_uuid: t.uuid } } }), `Deleted ${t.name}.`))
      list.reload();
  };
  // Shown when the ACL allows a move of this tenant to at least one other tenant of the tree (an
  // ACL may name one parent, e.g. auth.tenants.{t}.parent.{p}.update). Every other tenant stays a
  // choice: the API decides, and its refusal (a cycle, a parent not allowed) is shown as it comes.
  const moveTargets = (t: Tenant) => tenants.filter((x) => x.uuid !== t.uuid && x.uuid !== t.parent_uuid);
  const mayMove = (t: Tenant) =>
    moveTargets(t).some((x) =>
      api.can("auth.tenants.{tenant_uuid}.parent.{parent_tenant_uuid}.update", {
        tenant_uuid: t.uuid,
        parent_tenant_uuid: x.uuid,
      }),
    );
  const node = (t: Tenant) => {
    const children = byParent.get(t.uuid) ?? [];
    const open = !folded.has(t.uuid);
    return (
      <li key={t.uuid}>
        <div class="tenant">
          {children.length > 0 ? (
            <button
              type="button"
              class="fold"
              aria-expanded={open}
              aria-controls={`sub-${t.uuid}`}
              aria-label={`Sub-tenants of ${t.name}`}
              onClick={() => toggle(t.uuid)}
            >
              <span aria-hidden="true">{open ? "▾" : "▸"}</span>
            </button>
          ) : (
            <span class="fold-space" aria-hidden="true" />
          )}
          <span class="name">{t.name ?? t.uuid}</span> <code title={t.uuid}>{t.slug}</code>
          {children.length > 0 && !open && <span class="meta">({children.length} below)</span>}
          <span class="row-actions">
            {api.can("auth.tenants.create") && (
              <button type="button" onClick={() => start(t, "create")} aria-label={`Add a sub-tenant to ${t.name}`}>
                Add sub-tenant
              </button>
            )}
            {api.can("auth.tenants.{tenant_uuid}.update", { tenant_uuid: t.uuid }) && (
              <button type="button" onClick={() => start(t, "rename")} aria-label={`Rename ${t.name}`}>
                Rename
              </button>
            )}
            {t.uuid !== api.me.tenantUuid && mayMove(t) && (
              <button type="button" onClick={() => start(t, "move")} aria-label={`Move ${t.name}`}>
                Move
              </button>
            )}
            {api.can("auth.tenants.{tenant_uuid}.delete", { tenant_uuid: t.uuid }) && t.uuid !== api.me.tenantUuid && (
              <button type="button" class="danger" onClick={() => void remove(t)} aria-label={`Delete ${t.name}`}>
                Delete
              </button>
            )}
          </span>
        </div>
        {children.length > 0 && (
          <ul id={`sub-${t.uuid}`} hidden={!open}>
            {children.map(node)}
          </ul>
        )}
      </li>
    );
  };
  return (
    <Screen title="Tenants" intro="The tenants you administer, as a tree.">
      {list.loading && <Busy label={loaded ? `Loading… ${loaded} tenants so far` : "Loading…"} />}
      <ErrorBox error={act.error ?? list.error} />
      {act.notice && <Notice text={act.notice} />}
      {editing && (
        <form
          class="panel"
          ref={form}
          onSubmit={(e) => void submit(e)}
          onKeyDown={(e) => e.key === "Escape" && close()}
          aria-label="Tenant change"
        >
          <h2>
            {editing.mode === "create" ? "New sub-tenant of" : editing.mode === "rename" ? "Rename" : "Move"}{" "}
            {editing.tenant.name}
          </h2>
          {editing.mode === "move" ? (
            <div class="field">
              <label for="move-target">New parent</label>
              <select
                id="move-target"
                required
                value={target}
                onChange={(e) => setTarget((e.currentTarget as HTMLSelectElement).value)}
              >
                <option value="">Choose a tenant</option>
                {moveTargets(editing.tenant).map((x) => (
                  <option key={x.uuid} value={x.uuid}>
                    {x.name}
                  </option>
                ))}
              </select>
            </div>
          ) : (
            <Field label="Name" name="name" value={name} onInput={setName} error={act.error} required />
          )}
          <div class="actions">
            <button type="submit" class="primary" disabled={act.busy}>
              {editing.mode === "create" ? "Create" : editing.mode === "rename" ? "Rename" : "Move"}
            </button>
            <button type="button" onClick={close}>
              Cancel
            </button>
          </div>
        </form>
      )}
      <ul class="tree" aria-label="Tenant tree">
        {(byParent.get("") ?? []).map(node)}
      </ul>
    </Screen>
  );
}
