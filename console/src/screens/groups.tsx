// Groups: list, create, delete; one group's name, members and policies.
import type { Group, Policy, User } from "../../../clients/typescript/index.ts";
import { useState } from "preact/hooks";
import {
  Busy,
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

export function GroupsScreen({ api }: ScreenProps) {
  const act = useAction();
  const [name, setName] = useState("");
  const create = async (e: Event) => {
    e.preventDefault();
    if (await act.run(() => api.ops.createGroup({ body: { name } as never }), `Created ${name}.`)) {
      setName("");
      reloadLists();
    }
  };
  const remove = async (g: Group) => {
    if (!(await confirmAction(`Delete the group ${g.name}?`, <p>Its members lose the group's policies.</p>))) return;
    if (await act.run(() => api.ops.deleteGroup({ params: { path: { group_uuid: g.uuid } } }), `Deleted ${g.name}.`))
      reloadLists();
  };
  return (
    <Screen title="Groups" intro="Groups give their members policies.">
      <ErrorBox error={act.error} />
      {act.notice && <Notice text={act.notice} />}
      {api.can("auth.groups.create") && (
        <form class="inline panel" onSubmit={(e) => void create(e)} aria-label="New group">
          <Field label="New group name" name="name" value={name} onInput={setName} error={act.error} required />
          <button type="submit" class="primary" disabled={act.busy}>
            Create
          </button>
        </form>
      )}
      <PagedList<Group>
        label="Groups"
        load={(q) => api.ops.listGroups({ params: { query: { ...q, recurse: true, order: "name" } } })}
        rowKey={(g) => g.uuid}
        columns={[
          { title: "Name", cell: (g) => <a href={`#/groups/${g.uuid}`}>{g.name}</a> },
          { title: "Kind", cell: (g) => (g.system_managed ? "system" : g.read_only ? "read-only" : "") },
          {
            title: "Actions",
            cell: (g) =>
              !g.system_managed &&
              !g.read_only &&
              api.can("auth.groups.{group_uuid}.delete", { group_uuid: g.uuid }) && (
                <button type="button" class="danger" aria-label={`Delete ${g.name}`} onClick={() => void remove(g)}>
                  Delete
                </button>
              ),
          },
        ]}
      />
    </Screen>
  );
}

export function GroupScreen({ api, path }: ScreenProps) {
  const uuid = detailId(path);
  const p = { group_uuid: uuid };
  const data = useAsync(async () => {
    const [group, users, policies, allPolicies] = await Promise.all([
      api.ops.getGroup({ params: { path: p } }),
      api.can("auth.groups.{group_uuid}.users.read", p)
        ? api.ops.listGroupUsers({ params: { path: p, query: { limit: 200 } } }).then((r) => r.items as User[])
        : Promise.resolve([] as User[]),
      api.can("auth.groups.{group_uuid}.policies.read", p)
        ? api.ops.listGroupPolicies({ params: { path: p, query: { limit: 200 } } }).then((r) => r.items as Policy[])
        : Promise.resolve([] as Policy[]),
      api.can("auth.policies.read")
        ? api.ops
            .listPolicies({ params: { query: { limit: 200, recurse: true, order: "name" } } })
            .then((r) => r.items as Policy[])
        : Promise.resolve([] as Policy[]),
    ]);
    return { group: group as Group, users, policies, allPolicies };
  }, [uuid]);
  const act = useAction();
  const [name, setName] = useState<string | null>(null);
  const [choice, setChoice] = useState("");
  const d = data.data;
  const run = (a: () => Promise<unknown>, done: string) => act.run(a, done).then((ok) => ok && data.reload());
  return (
    <Screen title={d ? `Group ${d.group.name}` : "Group"}>
      <p>
        <a href="#/groups">← All groups</a>
      </p>
      {data.loading && <Busy />}
      <ErrorBox error={data.error ?? act.error} />
      {act.notice && <Notice text={act.notice} />}
      {d && (
        <div class="grid">
          {api.can("auth.groups.{group_uuid}.update", p) && !d.group.system_managed && (
            <form
              class="panel"
              aria-label="Rename"
              onSubmit={(e) => {
                e.preventDefault();
                void run(
                  () => api.ops.updateGroup({ params: { path: p }, body: { name: name ?? d.group.name } as never }),
                  "Saved.",
                );
              }}
            >
              <h2>Name</h2>
              <Field label="Name" name="name" value={name ?? d.group.name ?? ""} onInput={setName} error={act.error} />
              <button type="submit" class="primary">
                Save
              </button>
            </form>
          )}
          <section class="panel" aria-labelledby="members">
            <h2 id="members">Members</h2>
            <ul class="plain">
              {d.users.map((u) => (
                <li key={u.uuid}>
                  <a href={`#/users/${u.uuid}`}>{u.username ?? u.uuid}</a>{" "}
                  {api.can("auth.groups.{group_uuid}.users.{user_uuid}.delete", { ...p, user_uuid: u.uuid }) &&
                    !d.group.system_managed && (
                      <button
                        type="button"
                        class="danger"
                        aria-label={`Remove ${u.username}`}
                        onClick={async () => {
                          if (
                            await confirmAction(
                              `Remove ${u.username} from the group?`,
                              <p>They lose the group's policies.</p>,
                              "Remove",
                            )
                          )
                            await run(
                              () => api.ops.removeGroupUser({ params: { path: { ...p, user_uuid: u.uuid } } }),
                              "Removed.",
                            );
                        }}
                      >
                        Remove
                      </button>
                    )}
                </li>
              ))}
              {d.users.length === 0 && <li>No member.</li>}
            </ul>
            <p class="hint">Add members from a user's page.</p>
          </section>
          <section class="panel" aria-labelledby="group-policies">
            <h2 id="group-policies">Policies</h2>
            <ul class="plain">
              {d.policies.map((x) => (
                <li key={x.uuid}>
                  <a href={`#/policies/${x.uuid}`}>{x.name}</a>{" "}
                  {api.can("auth.groups.{group_uuid}.policies.{policy}.delete", { ...p, policy: x.uuid }) && (
                    <button
                      type="button"
                      class="danger"
                      aria-label={`Detach ${x.name}`}
                      onClick={async () => {
                        if (
                          await confirmAction(
                            `Detach ${x.name}?`,
                            <p>Members lose its ACL at their next token.</p>,
                            "Detach",
                          )
                        )
                          await run(
                            () => api.ops.removeGroupPolicy({ params: { path: { ...p, policy: x.uuid } } } as never),
                            "Detached.",
                          );
                      }}
                    >
                      Detach
                    </button>
                  )}
                </li>
              ))}
              {d.policies.length === 0 && <li>No policy.</li>}
            </ul>
            {d.allPolicies.length > 0 && (
              <form
                class="inline"
                onSubmit={(e) => {
                  e.preventDefault();
                  if (choice)
                    void run(
                      () => api.ops.addGroupPolicy({ params: { path: { ...p, policy: choice } } } as never),
                      "Attached.",
                    );
                }}
              >
                <label for="attach-policy">Attach a policy</label>
                <select
                  id="attach-policy"
                  value={choice}
                  onChange={(e) => setChoice((e.currentTarget as HTMLSelectElement).value)}
                >
                  <option value="">Choose…</option>
                  {d.allPolicies
                    .filter((x) => !d.policies.some((y) => y.uuid === x.uuid))
                    .map((x) => (
                      <option key={x.uuid} value={x.uuid}>
                        {x.name}
                      </option>
                    ))}
                </select>
                <button type="submit">Attach</button>
              </form>
            )}
          </section>
        </div>
      )}
    </Screen>
  );
}
