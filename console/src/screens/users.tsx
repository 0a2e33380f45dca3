// Users of the tenant and its sub-tenants: search, paging, create.
import type { User } from "../../../clients/typescript/index.ts";
import { useState } from "preact/hooks";
import { ErrorBox, Field, Notice, PagedList, Screen, reloadLists, useAction } from "../ui.tsx";
import type { ScreenProps } from "./index.tsx";

export const displayName = (u: User) => [u.firstname, u.lastname].filter(Boolean).join(" ") || u.username || u.uuid;

function CreateUser({ api }: ScreenProps) {
  const act = useAction();
  const [open, setOpen] = useState(false);
  const [form, setForm] = useState({ username: "", password: "", firstname: "", lastname: "", email_address: "" });
  const set = (k: keyof typeof form) => (v: string) => setForm({ ...form, [k]: v });
  const submit = async (e: Event) => {
    e.preventDefault();
    const body = Object.fromEntries(Object.entries(form).filter(([, v]) => v !== ""));
    if (await act.run(() => api.ops.createUser({ body: body as never }), `Created ${form.username}.`)) {
      setForm({ username: "", password: "", firstname: "", lastname: "", email_address: "" });
      setOpen(false);
      reloadLists();
    }
  };
  if (!open)
    return (
      <>
        {act.notice && <Notice text={act.notice} />}
        <button type="button" class="primary" onClick={() => setOpen(true)}>
          New user
        </button>
      </>
    );
  return (
    <form class="panel" noValidate onSubmit={(e) => void submit(e)} aria-label="New user">
      <h2>New user</h2>
      <ErrorBox error={act.error} />
      <Field label="Username" name="username" value={form.username} onInput={set("username")} error={act.error} />
      <Field
        label="Password"
        name="password"
        type="password"
        autocomplete="new-password"
        value={form.password}
        onInput={set("password")}
        error={act.error}
      />
      <Field label="First name" name="firstname" value={form.firstname} onInput={set("firstname")} error={act.error} />
      <Field label="Last name" name="lastname" value={form.lastname} onInput={set("lastname")} error={act.error} />
      <Field
        label="Email address"
        name="email_address"
        type="email"
        value={form.email_address}
        onInput={set("email_address")}
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
  );
}

export function UsersScreen(props: ScreenProps) {
  const { api } = props;
  return (
    <Screen title="Users" intro="Users of this tenant and its sub-tenants.">
      {api.can("auth.users.create") && <CreateUser {...props} />}
      <PagedList<User>
        label="Users"
        load={(q) => api.ops.listUsers({ params: { query: { ...q, recurse: true, order: "username" } } })}
        rowKey={(u) => u.uuid}
        columns={[
          { title: "Username", cell: (u) => <a href={`#/users/${u.uuid}`}>{u.username ?? u.uuid}</a> },
          { title: "Name", cell: (u) => [u.firstname, u.lastname].filter(Boolean).join(" ") },
          { title: "Email", cell: (u) => u.emails?.find((m) => m.main)?.address ?? "" },
          { title: "State", cell: (u) => (u.enabled === false ? <span class="bad">disabled</span> : "enabled") },
        ]}
      />
    </Screen>
  );
}
