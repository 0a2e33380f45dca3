// One user: profile (edit, disable), password (set, "must change at next login", reset mail), emails, groups, policies, sessions and
// refresh tokens (revocable), MFA status and reset, deletion.
import type { Group, Policy, RefreshToken, Session, User } from "../../../clients/typescript/index.ts";
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import {
  Busy,
  Check,
  ErrorBox,
  Field,
  Notice,
  Screen,
  confirmAction,
  forgetUserNames,
  shortId,
  useAction,
  useAsync,
} from "../ui.tsx";
import { detailId, type ScreenProps } from "./index.tsx";
import { displayName } from "./users.tsx";

type Act = ReturnType<typeof useAction>;

function Section(props: { title: string; children: ComponentChildren }) {
  const id = `s-${props.title.replace(/\W+/g, "-").toLowerCase()}`;
  return (
    <section class="panel" aria-labelledby={id}>
      <h2 id={id}>{props.title}</h2>
      {props.children}
    </section>
  );
}

function Profile({ api, user, act, reload }: { api: ScreenProps["api"]; user: User; act: Act; reload: () => void }) {
  const [form, setForm] = useState({
    username: user.username ?? "",
    firstname: user.firstname ?? "",
    lastname: user.lastname ?? "",
    enabled: user.enabled !== false,
  });
  const may = api.can("auth.users.{user_uuid}.update", { user_uuid: user.uuid });
  // A user its tenant's directory manages (SCIM, docs/scim.md): the directory's next update
  // overwrites what is edited here, so the console says so, and asks before saving.
  const directory = useAsync(
    () =>
      api.can("auth.users.{user_uuid}.scim.read", { user_uuid: user.uuid })
        ? (api.ops.getUserDirectoryState({ params: { path: { user_uuid: user.uuid } } }) as Promise<{
            managed: boolean;
            external_id: string | null;
          }>)
        : Promise.resolve({ managed: false, external_id: null }),
    [user.uuid],
  );
  const managed = directory.data?.managed === true;
  const save = async (e: Event) => {
    e.preventDefault();
    const body = {
      username: form.username || null,
      firstname: form.firstname || null,
      lastname: form.lastname || null,
      purpose: user.purpose,
      authentication_method: user.authentication_method,
      enabled: form.enabled,
    };
    if (managed) {
      const ok = await confirmAction(
        `Edit a user the directory manages?`,
        <p>
          {displayName(user)} is provisioned by the tenant's directory (SCIM): its next update of this user replaces the
          username, names, addresses and state changed here. Change them in the directory instead.
        </p>,
        "Save anyway",
      );
      if (!ok) return;
    }
    if (!form.enabled && user.enabled !== false) {
      const ok = await confirmAction(
        `Disable ${displayName(user)}?`,
        <p>Their sessions and refresh tokens end, and they cannot sign in until enabled again.</p>,
        "Disable",
      );
      if (!ok) return;
    }
    if (
      await act.run(
        () => api.ops.updateUser({ params: { path: { user_uuid: user.uuid } }, body: body as never }),
        "Saved.",
      )
    ) {
      forgetUserNames();
      reload();
    }
  };
  return (
    <Section title="Profile">
      {managed && (
        <Notice
          text={`Managed by the tenant's directory (SCIM${directory.data?.external_id ? `, external id ${directory.data.external_id}` : ""}): edit this user there.`}
        />
      )}
      <form onSubmit={(e) => void save(e)} aria-label="Profile">
        <Field
          label="Username"
          name="username"
          value={form.username}
          onInput={(v) => setForm({ ...form, username: v })}
          error={act.error}
        />
        <Field
          label="First name"
          name="firstname"
          value={form.firstname}
          onInput={(v) => setForm({ ...form, firstname: v })}
          error={act.error}
        />
        <Field
          label="Last name"
          name="lastname"
          value={form.lastname}
          onInput={(v) => setForm({ ...form, lastname: v })}
          error={act.error}
        />
        <Check
          label="Enabled (may sign in)"
          name="enabled"
          checked={form.enabled}
          onChange={(v) => setForm({ ...form, enabled: v })}
        />
        <p class="meta">
          Tenant <code>{user.tenant_uuid}</code> · purpose {user.purpose} · authentication {user.authentication_method}
        </p>
        {may && (
          <div class="actions">
            <button type="submit" class="primary" disabled={act.busy}>
              Save
            </button>
          </div>
        )}
      </form>
    </Section>
  );
}

/**
 * An administrator sets the password (POST /users/password/reset): the user's sessions end; with
 * "must change", the user chooses a new one at the next sign-in (docs/security.md).
 */
function SetPassword({
  api,
  user,
  act,
  reload,
}: {
  api: ScreenProps["api"];
  user: User;
  act: Act;
  reload: () => void;
}) {
  const [password, setPassword] = useState("");
  const [mustChange, setMustChange] = useState(true);
  if (!api.can("auth.users.password.reset.{user_uuid}.create", { user_uuid: user.uuid })) return null;
  const submit = async (e: Event) => {
    e.preventDefault();
    const done = await act.run(
      () =>
        api.ops.resetPassword({
          params: { query: { user_uuid: user.uuid } },
          body: { password, must_change: mustChange },
        } as never),
      mustChange ? "Password set; the user must change it at the next sign-in." : "Password set.",
    );
    if (done) {
      setPassword("");
      reload();
    }
  };
  return (
    <form onSubmit={(e) => void submit(e)} aria-label="Set the password">
      <Field
        label="New password"
        name="password"
        type="password"
        autocomplete="new-password"
        required
        value={password}
        onInput={setPassword}
        error={act.error}
        hint="The user's sessions end."
      />
      <Check label="Must change it at next sign-in" name="must_change" checked={mustChange} onChange={setMustChange} />
      <div class="actions">
        <button type="submit" class="primary" disabled={act.busy}>
          Set password
        </button>
      </div>
    </form>
  );
}

function Emails({ api, user, act, reload }: { api: ScreenProps["api"]; user: User; act: Act; reload: () => void }) {
  const [address, setAddress] = useState("");
  const emails = user.emails ?? [];
  const may = api.can("auth.admin.users.{user_uuid}.emails.update", { user_uuid: user.uuid });
  const put = (list: Array<{ address: string; main: boolean; confirmed: boolean }>, done: string) =>
    act
      .run(
        () =>
          api.ops.updateAdminUserEmails({
            params: { path: { user_uuid: user.uuid } },
            body: { emails: list } as never,
          }),
        done,
      )
      .then((ok) => ok && reload());
  const current = emails.map((m) => ({ address: m.address, main: !!m.main, confirmed: !!m.confirmed }));
  return (
    <Section title="Email addresses">
      <ul class="plain">
        {current.map((m) => (
          <li key={m.address}>
            {m.address} {m.main && <span class="tag">main</span>}{" "}
            {m.confirmed ? <span class="tag">confirmed</span> : <span class="tag">unconfirmed</span>}
            {may && !m.main && (
              <button
                type="button"
                onClick={() =>
                  void put(
                    current.map((x) => ({ ...x, main: x.address === m.address })),
                    "Main address changed.",
                  )
                }
              >
                Make main
              </button>
            )}
            {may && (
              <button
                type="button"
                class="danger"
                aria-label={`Remove ${m.address}`}
                onClick={async () => {
                  if (
                    await confirmAction(
                      `Remove ${m.address}?`,
                      <p>The user can no longer sign in or reset a password with it.</p>,
                      "Remove",
                    )
                  )
                    await put(
                      current.filter((x) => x.address !== m.address),
                      "Address removed.",
                    );
                }}
              >
                Remove
              </button>
            )}
          </li>
        ))}
        {current.length === 0 && <li>No address.</li>}
      </ul>
      {may && (
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            void put([...current, { address, main: current.length === 0, confirmed: true }], `Added ${address}.`).then(
              () => setAddress(""),
            );
          }}
        >
          <Field
            label="New address"
            name="emails"
            type="email"
            value={address}
            onInput={setAddress}
            error={act.error}
            required
          />
          <button type="submit">Add</button>
        </form>
      )}
    </Section>
  );
}

/** The stock roles Tessera ships (read-only policies, README: roles out of the box). */
const STOCK_ROLES = [
  { slug: "tessera_tenant_admin", label: "Make tenant administrator", what: "administers the user's tenant and below" },
  { slug: "tessera_auditor", label: "Make auditor", what: "reads everything of the user's tenant and below" },
];

/** One-click stock roles: attaching the policy still needs a caller who could grant its entries (else 403). */
function Roles(props: {
  current: Policy[];
  available: Policy[];
  attach: (policy: Policy, what: string) => Promise<unknown>;
}) {
  const have = new Set(props.current.map((p) => p.slug));
  const offered = STOCK_ROLES.flatMap((role) => {
    const policy = props.available.find((p) => p.slug === role.slug);
    return policy && !have.has(role.slug) ? [{ ...role, policy }] : [];
  });
  if (offered.length === 0) return null;
  return (
    <Section title="Roles">
      <ul class="plain">
        {offered.map((role) => (
          <li key={role.slug}>
            <button type="button" onClick={() => void props.attach(role.policy, role.what)}>
              {role.label}
            </button>{" "}
            <span class="hint">
              <code>{role.slug}</code>: {role.what}
            </span>
          </li>
        ))}
      </ul>
    </Section>
  );
}

/** A list of links to things (groups, policies) with add (from a choice) and remove. */
function Membership<T extends { uuid: string; name?: string | null }>(props: {
  title: string;
  current: T[];
  choices: T[];
  mayAdd: boolean;
  mayRemove: (item: T) => boolean;
  href: (item: T) => string;
  add: (uuid: string) => Promise<unknown>;
  remove: (item: T) => Promise<unknown>;
}) {
  const [choice, setChoice] = useState("");
  const have = new Set(props.current.map((x) => x.uuid));
  const id = `add-${props.title.toLowerCase()}`;
  return (
    <Section title={props.title}>
      <ul class="plain">
        {props.current.map((x) => (
          <li key={x.uuid}>
            <a href={props.href(x)}>{x.name ?? x.uuid}</a>{" "}
            {props.mayRemove(x) && (
              <button
                type="button"
                class="danger"
                aria-label={`Remove from ${x.name}`}
                onClick={() => void props.remove(x)}
              >
                Remove
              </button>
            )}
          </li>
        ))}
        {props.current.length === 0 && <li>None.</li>}
      </ul>
      {props.mayAdd && (
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            if (choice) void props.add(choice).then(() => setChoice(""));
          }}
        >
          <label for={id}>Add to</label>
          <select id={id} value={choice} onChange={(e) => setChoice((e.currentTarget as HTMLSelectElement).value)}>
            <option value="">Choose…</option>
            {props.choices
              .filter((c) => !have.has(c.uuid))
              .map((c) => (
                <option key={c.uuid} value={c.uuid}>
                  {c.name}
                </option>
              ))}
          </select>
          <button type="submit">Add</button>
        </form>
      )}
    </Section>
  );
}

export function UserScreen({ api, path }: ScreenProps) {
  const uuid = detailId(path);
  const q = { params: { path: { user_uuid: uuid } } };
  const user = useAsync(() => api.ops.getUser(q), [uuid]);
  const related = useAsync(async () => {
    const list = <T,>(ok: boolean, p: () => Promise<{ items: T[] }>) =>
      ok ? p().then((r) => r.items) : Promise.resolve([] as T[]);
    const u = { user_uuid: uuid };
    const [groups, policies, sessions, tokens, mfa, allGroups, allPolicies] = await Promise.all([
      list<Group>(api.can("auth.users.{user_uuid}.groups.read", u), () =>
        api.ops.listUserGroups({ params: { path: u, query: { limit: 100 } } }),
      ),
      list<Policy>(api.can("auth.users.{user_uuid}.policies.read", u), () =>
        api.ops.listUserPolicies({ params: { path: u, query: { limit: 100 } } }),
      ),
      list<Session>(api.can("auth.users.{user_uuid}.sessions.read", u), () =>
        api.ops.listUserSessions({ params: { path: u, query: { limit: 100 } } }),
      ),
      list<RefreshToken>(api.can("auth.users.{user_uuid}.tokens.read", u), () =>
        api.ops.listUserTokens({ params: { path: u, query: { limit: 100 } } }),
      ),
      api.can("auth.users.{user_uuid}.mfa.read", u)
        ? (
            api.ops.getUserMfa({ params: { path: u } }) as Promise<{
              totp: { enrolled: boolean; confirmed: boolean; confirmed_at: string | null };
              recovery_codes_left: number;
            }>
          ).catch(() => null)
        : Promise.resolve(null),
      list<Group>(api.can("auth.groups.read"), () =>
        api.ops.listGroups({ params: { query: { limit: 200, order: "name", recurse: true } } }),
      ),
      list<Policy>(api.can("auth.policies.read"), () =>
        api.ops.listPolicies({ params: { query: { limit: 200, order: "name", recurse: true } } }),
      ),
    ]);
    return { groups, policies, sessions, tokens, mfa, allGroups, allPolicies };
  }, [uuid]);
  const act = useAction();
  useEffect(() => window.scrollTo(0, 0), [uuid]);
  const u = user.data;
  const r = related.data;
  const reloadAll = () => {
    user.reload();
    related.reload();
  };
  const run = (a: () => Promise<unknown>, done: string) => act.run(a, done).then((ok) => ok && reloadAll());
  const ask = async (title: string, body: string, action: string, a: () => Promise<unknown>, done: string) => {
    if (await confirmAction(title, <p>{body}</p>, action)) await run(a, done);
  };
  return (
    <Screen title={u ? `User ${displayName(u)}` : "User"}>
      <p>
        <a href="#/users">← All users</a>
      </p>
      {(user.loading || related.loading) && <Busy />}
      <ErrorBox error={user.error ?? act.error} />
      {act.notice && <Notice text={act.notice} />}
      {u && (
        <div class="grid">
          <Profile api={api} user={u} act={act} reload={reloadAll} key={JSON.stringify(u)} />
          <Section title="Password">
            <SetPassword api={api} user={u} act={act} reload={reloadAll} />
            <p>Or send the user a mail with a link to choose a new password (needs an email address).</p>
            <button
              type="button"
              onClick={() =>
                void run(
                  () => api.ops.requestPasswordReset({ params: { query: { login: u.username ?? "" } } } as never),
                  "Password reset mail sent.",
                )
              }
            >
              Send a password reset mail
            </button>
          </Section>
          <Emails api={api} user={u} act={act} reload={reloadAll} />
          {r && (
            <>
              <Membership<Group>
                title="Groups"
                current={r.groups}
                choices={r.allGroups.filter((g) => !g.system_managed)}
                mayAdd={api.can("auth.groups.read")}
                mayRemove={(g) =>
                  !g.system_managed &&
                  api.can("auth.groups.{group_uuid}.users.{user_uuid}.delete", { group_uuid: g.uuid, user_uuid: uuid })
                }
                href={(g) => `#/groups/${g.uuid}`}
                add={(g) =>
                  run(
                    () => api.ops.addGroupUser({ params: { path: { group_uuid: g, user_uuid: uuid } } }),
                    "Added to the group.",
                  )
                }
                remove={(g) =>
                  ask(
                    `Remove from ${g.name}?`,
                    "The user loses the group's policies.",
                    "Remove",
                    () => api.ops.removeGroupUser({ params: { path: { group_uuid: g.uuid, user_uuid: uuid } } }),
                    "Removed from the group.",
                  )
                }
              />
              <Membership<Policy>
                title="Policies"
                current={r.policies}
                choices={r.allPolicies}
                mayAdd={api.can("auth.policies.read")}
                mayRemove={(p) =>
                  api.can("auth.users.{user_uuid}.policies.{policy}.delete", { user_uuid: uuid, policy: p.uuid })
                }
                href={(p) => `#/policies/${p.uuid}`}
                add={(p) =>
                  run(
                    () => api.ops.addUserPolicy({ params: { path: { user_uuid: uuid, policy: p } } } as never),
                    "Policy attached.",
                  )
                }
                remove={(p) =>
                  ask(
                    `Detach ${p.name}?`,
                    "The user loses its ACL at their next token.",
                    "Detach",
                    () => api.ops.removeUserPolicy({ params: { path: { user_uuid: uuid, policy: p.uuid } } } as never),
                    "Policy detached.",
                  )
                }
              />
              {api.can("auth.policies.read") && (
                <Roles
                  current={r.policies}
                  available={r.allPolicies}
                  attach={(p, what) =>
                    ask(
                      `Attach ${p.name}?`,
                      `The user ${what}, from their next token.`,
                      "Attach",
                      () => api.ops.addUserPolicy({ params: { path: { user_uuid: uuid, policy: p.uuid } } } as never),
                      "Role given.",
                    )
                  }
                />
              )}
              <Section title="Sessions">
                <ul class="plain">
                  {r.sessions.map((s) => (
                    <li key={s.uuid}>
                      <code title={s.uuid}>{shortId(s.uuid)}</code> {s.mobile && <span class="tag">mobile</span>}
                      {api.can("auth.users.{user_uuid}.sessions.{session_uuid}.delete", {
                        user_uuid: uuid,
                        session_uuid: s.uuid,
                      }) && (
                        <button
                          type="button"
                          class="danger"
                          aria-label={`Revoke session ${shortId(s.uuid)}`}
                          onClick={() =>
                            void ask(
                              "Revoke this session?",
                              "Its tokens stop working at once.",
                              "Revoke",
                              () =>
                                api.ops.deleteUserSession({
                                  params: { path: { user_uuid: uuid, session_uuid: s.uuid } },
                                }),
                              "Session revoked.",
                            )
                          }
                        >
                          Revoke
                        </button>
                      )}
                    </li>
                  ))}
                  {r.sessions.length === 0 && <li>No session.</li>}
                </ul>
              </Section>
              <Section title="Refresh tokens">
                <ul class="plain">
                  {r.tokens.map((t) => (
                    <li key={t.client_id}>
                      {t.client_id} <small>since {t.created_at}</small>{" "}
                      {api.can("auth.users.{user_uuid}.tokens.{client_id}.delete", {
                        user_uuid: uuid,
                        client_id: t.client_id,
                      }) && (
                        <button
                          type="button"
                          class="danger"
                          aria-label={`Revoke the refresh token of ${t.client_id}`}
                          onClick={() =>
                            void ask(
                              `Revoke the refresh token of ${t.client_id}?`,
                              "The application must sign in again.",
                              "Revoke",
                              () =>
                                api.ops.deleteUserToken({
                                  params: { path: { user_uuid: uuid, client_id: t.client_id } },
                                }),
                              "Refresh token revoked.",
                            )
                          }
                        >
                          Revoke
                        </button>
                      )}
                    </li>
                  ))}
                  {r.tokens.length === 0 && <li>No refresh token.</li>}
                </ul>
              </Section>
              <Section title="Multi-factor authentication">
                {r.mfa ? (
                  <>
                    <p>
                      Authenticator app:{" "}
                      <strong>
                        {r.mfa.totp.confirmed ? "active" : r.mfa.totp.enrolled ? "enrolment not confirmed" : "none"}
                      </strong>
                      {" · "}recovery codes left: {r.mfa.recovery_codes_left}
                    </p>
                    {r.mfa.totp.enrolled && api.can("auth.users.{user_uuid}.mfa.delete", { user_uuid: uuid }) && (
                      <button
                        type="button"
                        class="danger"
                        onClick={() =>
                          void ask(
                            "Reset this user's second factor?",
                            "They sign in with their password alone until they enrol again (unless their tenant requires MFA).",
                            "Reset",
                            () => api.ops.deleteUserMfaTotp({ params: { path: { user_uuid: uuid } } }),
                            "Second factor reset.",
                          )
                        }
                      >
                        Reset MFA
                      </button>
                    )}
                  </>
                ) : (
                  <p>Not available (no access, or MFA is not configured on this server).</p>
                )}
              </Section>
            </>
          )}
          {api.can("auth.users.{user_uuid}.delete", { user_uuid: uuid }) && (
            <Section title="Delete">
              <button
                type="button"
                class="danger"
                onClick={async () => {
                  if (
                    await confirmAction(
                      `Delete ${displayName(u)}?`,
                      <p>The user, their sessions and tokens are removed. This cannot be undone.</p>,
                    )
                  )
                    if (await act.run(() => api.ops.deleteUser(q))) location.hash = "#/users";
                }}
              >
                Delete this user
              </button>
            </Section>
          )}
        </div>
      )}
    </Screen>
  );
}
