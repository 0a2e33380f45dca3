// The tenant tree below the signed-in user's tenant: browse, create a sub-tenant, rename, move,
// delete (the API explains a refusal: a tenant with users or sub-tenants, or one's own tenant);
// and the branding of its hosted pages (product name, logo, colours: the API checks the contrast).
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
import type { ErrorView } from "../api.ts";
import type { ScreenProps } from "./index.tsx";

type Mode = "rename" | "move" | "create" | "branding";

interface Branding {
  product_name: string | null;
  logo: string | null;
  primary_color: string | null;
  background_color: string | null;
  text_color: string | null;
}
const NO_BRANDING: Branding = {
  product_name: null,
  logo: null,
  primary_color: null,
  background_color: null,
  text_color: null,
};

/** The branding form: the name, three colours (#rrggbb; empty: the stock one) and the logo (a small PNG, JPEG or WebP). */
function BrandingFields(props: { brand: Branding; onChange: (b: Branding) => void; error: ErrorView | null }) {
  const { brand, onChange, error } = props;
  const set = (k: keyof Branding) => (v: string) => onChange({ ...brand, [k]: v });
  const readLogo = (e: Event) => {
    const file = (e.currentTarget as HTMLInputElement).files?.[0];
    if (!file) return;
    const reader = new FileReader();
    reader.onload = () => onChange({ ...brand, logo: String(reader.result) });
    reader.readAsDataURL(file);
  };
  return (
    <>
      <Field
        label="Product name"
        name="product_name"
        value={brand.product_name ?? ""}
        onInput={set("product_name")}
        error={error}
      />
      {(["primary_color", "background_color", "text_color"] as const).map((k) => (
        <Field
          key={k}
          label={
            k === "primary_color" ? "Primary colour" : k === "background_color" ? "Background colour" : "Text colour"
          }
          name={k}
          value={brand[k] ?? ""}
          onInput={set(k)}
          error={error}
          hint="#rrggbb; empty: the stock colour. Checked for WCAG AA contrast when saved."
        />
      ))}
      <div class="field">
        <label for="branding-logo">Logo (PNG, JPEG or WebP, at most 48 KiB)</label>
        <input id="branding-logo" type="file" accept="image/png,image/jpeg,image/webp" onChange={readLogo} />
        {brand.logo && (
          <p>
            <img src={brand.logo} alt="The current logo" class="logo-preview" />{" "}
            <button type="button" onClick={() => onChange({ ...brand, logo: null })}>
              Remove the logo
            </button>
          </p>
        )}
      </div>
    </>
  );
}

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
  const [editing, setEditing] = useState<{ tenant: Tenant; mode: Mode } | null>(null);
  const [brand, setBrand] = useState<Branding>(NO_BRANDING);
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
  const start = async (tenant: Tenant, mode: Mode) => {
    opener.current = document.activeElement as HTMLElement | null;
    act.setError(null);
    if (mode === "branding") {
      const shown = await api.ops.getTenantBranding({ params: { path: { tenant_uuid: tenant.uuid } } });
      setBrand({ ...NO_BRANDING, ...(shown as Partial<Branding>) });
    }
    setEditing({ tenant, mode });
    setName(mode === "rename" ? (tenant.name ?? "") : "");
    setTarget("");
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!editing) return;
    const t = editing.tenant;
    const ok =
      editing.mode === "branding"
        ? await act.run(
            () =>
              api.ops.setTenantBranding({
                params: { path: { tenant_uuid: t.uuid } },
                body: Object.fromEntries(Object.entries(brand).map(([k, v]) => [k, v === "" ? null : v])) as never,
              }),
            `Branding of ${t.name} saved.`,
          )
        : editing.mode === "rename"
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
                () =>
                  api.ops.setTenantParent({ params: { path: { tenant_uuid: t.uuid, parent_tenant_uuid: target } } }),
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
            {api.can("auth.tenants.{tenant_uuid}.branding.update", { tenant_uuid: t.uuid }) && (
              <button type="button" onClick={() => void start(t, "branding")} aria-label={`Branding of ${t.name}`}>
                Branding
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
            {editing.mode === "create"
              ? "New sub-tenant of"
              : editing.mode === "rename"
                ? "Rename"
                : editing.mode === "branding"
                  ? "Branding of"
                  : "Move"}{" "}
            {editing.tenant.name}
          </h2>
          {editing.mode === "branding" ? (
            <BrandingFields brand={brand} onChange={setBrand} error={act.error} />
          ) : editing.mode === "move" ? (
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
              {editing.mode === "create"
                ? "Create"
                : editing.mode === "rename"
                  ? "Rename"
                  : editing.mode === "branding"
                    ? "Save"
                    : "Move"}
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
