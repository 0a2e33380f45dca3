// Shared pieces of every screen: loading state, the error box, forms whose fields show the API's
// per-field messages, the confirmation dialog, and a paged, searchable list.
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { errorView, type Api, type ErrorView } from "./api.ts";

export function useAsync<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: ErrorView; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the caller names what the load depends on
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (e) => live && setState({ error: errorView(e), loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { ...state, reload: useCallback(() => setTick((t) => t + 1), []) };
}

export function Busy({ label = "Loading…" }: { label?: string }) {
  return (
    <p class="busy" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" />
      {label}
    </p>
  );
}

export function ErrorBox({ error }: { error?: ErrorView | null }) {
  if (!error) return null;
  const fields = Object.entries(error.fields);
  return (
    <div class="error" role="alert">
      <p>{error.message}</p>
      {fields.length > 0 && (
        <ul>
          {fields.map(([f, m]) => (
            <li key={f}>
              <strong>{f}</strong>: {m}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function Notice({ text }: { text: string }) {
  return (
    <p class="notice" role="status">
      {text}
    </p>
  );
}

/** Runs an action, keeping its error and a success notice; `busy` while it runs. */
export function useAction() {
  const [error, setError] = useState<ErrorView | null>(null);
  const [notice, setNotice] = useState("");
  const [busy, setBusy] = useState(false);
  const run = useCallback(async (action: () => Promise<unknown>, done?: string) => {
    setBusy(true);
    setError(null);
    setNotice("");
    try {
      await action();
      if (done) setNotice(done);
      return true;
    } catch (e) {
      setError(errorView(e));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { error, notice, busy, run, setError };
}

let fieldSeq = 0;

export function Field(props: {
  label: string;
  name: string;
  value: string;
  onInput: (v: string) => void;
  error?: ErrorView | null;
  type?: string;
  required?: boolean;
  multiline?: boolean;
  hint?: string;
  autocomplete?: string;
}) {
  const id = useRef(`f${++fieldSeq}`).current;
  const message = props.error?.fields[props.name];
  const described = [props.hint ? `${id}-hint` : "", message ? `${id}-err` : ""].filter(Boolean).join(" ") || undefined;
  const common = {
    id,
    name: props.name,
    value: props.value,
    required: props.required,
    "aria-invalid": message ? true : undefined,
    "aria-describedby": described,
    onInput: (e: Event) => props.onInput((e.currentTarget as HTMLInputElement).value),
  };
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.multiline ? (
        <textarea {...common} rows={4} />
      ) : (
        <input {...common} type={props.type ?? "text"} autocomplete={props.autocomplete ?? "off"} />
      )}
      {props.hint && (
        <small id={`${id}-hint`} class="hint">
          {props.hint}
        </small>
      )}
      {message && (
        <small id={`${id}-err`} class="field-error">
          {message}
        </small>
      )}
    </div>
  );
}

export function Check(props: { label: string; checked: boolean; onChange: (v: boolean) => void; name?: string }) {
  return (
    <label class="check">
      <input
        type="checkbox"
        name={props.name}
        checked={props.checked}
        onChange={(e) => props.onChange((e.currentTarget as HTMLInputElement).checked)}
      />
      {props.label}
    </label>
  );
}

/** Focus back to `el` (the button that opened a dialog or form) after the render, or to the heading if it is gone. */
export function giveFocusBack(el: HTMLElement | null): void {
  setTimeout(() => (el?.isConnected ? el.focus() : document.querySelector<HTMLElement>("main h1")?.focus()));
}

// One confirmation dialog for the whole console (a native <dialog>: modal, focus kept inside,
// Escape cancels).
type Ask = {
  title: string;
  body: ComponentChildren;
  action: string;
  resolve: (ok: boolean) => void;
  /** What had the focus when the question was asked (the button), to give it back. */
  opener: HTMLElement | null;
};
let ask: ((a: Ask) => void) | null = null;

export function confirmAction(title: string, body: ComponentChildren, action = "Delete"): Promise<boolean> {
  const opener = document.activeElement as HTMLElement | null;
  return new Promise((resolve) =>
    ask ? ask({ title, body, action, resolve, opener }) : resolve(window.confirm(title)),
  );
}

export function ConfirmHost() {
  const [current, setCurrent] = useState<Ask | null>(null);
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    ask = setCurrent;
    return () => {
      ask = null;
    };
  }, []);
  // Focus goes into the dialog (showModal: its autofocus button) and, when it closes, back to what
  // had it (the button that asked), or to the screen's heading if that is gone.
  useEffect(() => {
    if (current && ref.current && !ref.current.open) ref.current.showModal();
  }, [current]);
  const close = (ok: boolean) => {
    ref.current?.close();
    current?.resolve(ok);
    setCurrent(null);
    giveFocusBack(current?.opener ?? null);
  };
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" onCancel={() => close(false)} class="confirm">
      {current && (
        <>
          <h2 id="confirm-title">{current.title}</h2>
          <div>{current.body}</div>
          <div class="actions">
            <button type="button" onClick={() => close(false)} autofocus>
              Cancel
            </button>
            <button type="button" class="danger" onClick={() => close(true)}>
              {current.action}
            </button>
          </div>
        </>
      )}
    </dialog>
  );
}

/**
 * A performance mark (User Timing) when the first list of the page is on screen: the time from
 * navigation to something useful, read by the test and by anyone in the browser's tools.
 */
export function markFirstList(): void {
  if (performance.getEntriesByName(FIRST_LIST, "mark").length === 0) performance.mark(FIRST_LIST);
}
const FIRST_LIST = "tessera-console:first-list";

export interface Page<T> {
  items: T[];
  total: number;
  filtered?: number;
  /** The count stopped (the audit trail counts at most 10,000 matches): "at least". */
  filtered_capped?: boolean;
}

/** A searchable, paged table: `load` gets search, limit and offset, and answers the API's page. */
export function PagedList<T>(props: {
  label: string;
  load: (q: { search: string; limit: number; offset: number }) => Promise<Page<T>>;
  columns: Array<{ title: string; cell: (item: T) => ComponentChildren }>;
  rowKey: (item: T) => string;
  deps?: unknown[];
  pageSize?: number;
  searchable?: boolean;
}) {
  const limit = props.pageSize ?? 25;
  const [search, setSearch] = useState("");
  const [query, setQuery] = useState("");
  // New filters (deps) start again at the first page: the offset belongs to the filters it was set with.
  const depsKey = JSON.stringify(props.deps ?? []);
  const [paged, setPaged] = useState({ depsKey, offset: 0 });
  const offset = paged.depsKey === depsKey ? paged.offset : 0;
  const setOffset = (n: number) => setPaged({ depsKey, offset: n });
  const page = useAsync(() => props.load({ search: query, limit, offset }), [query, offset, ...(props.deps ?? [])]);
  const data = page.data && { ...page.data, filtered: page.data.filtered ?? page.data.total };
  useEffect(() => {
    if (page.data) markFirstList();
  }, [page.data]);
  return (
    <section aria-label={props.label} aria-busy={page.loading}>
      {props.searchable !== false && (
        // biome-ignore lint/a11y/useSemanticElements: <search> is too new for every supported browser
        <form
          class="search"
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            setOffset(0);
            setQuery(search);
          }}
        >
          <label for={`search-${props.label}`}>Search {props.label.toLowerCase()}</label>
          <input
            id={`search-${props.label}`}
            type="search"
            value={search}
            onInput={(e) => setSearch((e.currentTarget as HTMLInputElement).value)}
          />
          <button type="submit">Search</button>
        </form>
      )}
      <ErrorBox error={page.error} />
      {page.loading && <Busy />}
      {data && (
        <>
          <div class="table-wrap">
            <table>
              <caption class="visually-hidden">{props.label}</caption>
              <thead>
                <tr>
                  {props.columns.map((c) => (
                    <th key={c.title} scope="col">
                      {c.title}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {data.items.map((item) => (
                  <tr key={props.rowKey(item)}>
                    {props.columns.map((c) => {
                      const content = c.cell(item);
                      const blank = content === "" || content === null || content === undefined || content === false;
                      return (
                        <td key={c.title} data-label={c.title} class={blank ? "blank" : undefined}>
                          {content}
                        </td>
                      );
                    })}
                  </tr>
                ))}
                {data.items.length === 0 && (
                  <tr>
                    <td colSpan={props.columns.length}>Nothing to show.</td>
                  </tr>
                )}
              </tbody>
            </table>
          </div>
          <nav class="pager" aria-label={`${props.label} pages`}>
            <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - limit))}>
              Previous
            </button>
            <span>
              {data.filtered === 0 ? 0 : offset + 1}–{Math.min(offset + limit, data.filtered)} of{" "}
              {data.filtered_capped ? `at least ${data.filtered}` : data.filtered}
              {data.filtered !== data.total ? ` (${data.total} in all)` : ""}
            </span>
            <button type="button" disabled={offset + limit >= data.filtered} onClick={() => setOffset(offset + limit)}>
              Next
            </button>
          </nav>
        </>
      )}
      <ReloadHook reload={page.reload} />
    </section>
  );
}

/** Lets a screen ask the list above to reload (after a create or delete). */
export const listReloaders = new Set<() => void>();
function ReloadHook({ reload }: { reload: () => void }) {
  useEffect(() => {
    listReloaders.add(reload);
    return () => void listReloaders.delete(reload);
  }, [reload]);
  return null;
}
export const reloadLists = () => {
  for (const r of listReloaders) r();
};

export function Screen(props: { title: string; children: ComponentChildren; intro?: string }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${props.title} · Tessera console`;
    ref.current?.focus();
  }, [props.title]);
  return (
    <>
      <h1 ref={ref} tabIndex={-1}>
        {props.title}
      </h1>
      {props.intro && <p class="intro">{props.intro}</p>}
      {props.children}
    </>
  );
}

export const shortId = (uuid: string) => uuid.slice(0, 8);

// Names for lists that name records by uuid (sessions, the audit trail): one GET per record, shared
// by every row and screen of this tab; a record the caller may not read stays a short uuid.
const names = new Map<string, Promise<string | null>>();
/** After a rename: the next lists ask again. */
export const forgetUserNames = () => names.clear();

/** The kinds of record a link can name: how to read its name, and its screen. */
const NAMED: Record<string, { screen: string; title: string; name(api: Api, uuid: string): Promise<string | null> }> = {
  user: {
    screen: "users",
    title: "User",
    name: (api, uuid) => api.ops.getUser({ params: { path: { user_uuid: uuid } } }).then((u) => u.username ?? null),
  },
  tenant: {
    screen: "tenants",
    title: "Tenant",
    name: (api, uuid) => api.ops.getTenant({ params: { path: { tenant_uuid: uuid } } }).then((t) => t.name ?? null),
  },
  group: {
    screen: "groups",
    title: "Group",
    name: (api, uuid) => api.ops.getGroup({ params: { path: { group_uuid: uuid } } }).then((g) => g.name ?? null),
  },
  policy: {
    screen: "policies",
    title: "Policy",
    name: (api, uuid) => api.ops.getPolicy({ params: { path: { policy: uuid } } }).then((p) => p.name ?? null),
  },
};

/** A record named by kind and uuid: a link to its screen showing its name once known (the uuid in the title). */
export function RecordLink({ api, kind, uuid }: { api: Api; kind: string; uuid: string }) {
  const named = NAMED[kind];
  const [name, setName] = useState<string | null>(null);
  useEffect(() => {
    if (!named) return;
    const key = `${api.me.token}:${kind}:${uuid}`;
    let found = names.get(key);
    if (!found) {
      found = named.name(api, uuid).catch(() => null);
      names.set(key, found);
    }
    let live = true;
    void found.then((n) => live && setName(n));
    return () => {
      live = false;
    };
  }, [api.me.token, kind, uuid]);
  if (!named) return <span title={`${kind} ${uuid}`}>{shortId(uuid)}</span>;
  return (
    <a href={`#/${named.screen}/${uuid}`} title={`${named.title} ${uuid}`}>
      {name ?? shortId(uuid)}
    </a>
  );
}

/** A link to a user's page, showing their username once known. */
export const UserLink = ({ api, uuid }: { api: Api; uuid: string }) => <RecordLink api={api} kind="user" uuid={uuid} />;
