// Sessions across the tenant (and its sub-tenants), each revocable.
import type { Session } from "../../../clients/typescript/index.ts";
import {
  ErrorBox,
  Notice,
  PagedList,
  Screen,
  UserLink,
  confirmAction,
  reloadLists,
  shortId,
  useAction,
} from "../ui.tsx";
import type { ScreenProps } from "./index.tsx";

export function SessionsScreen({ api }: ScreenProps) {
  const act = useAction();
  const revoke = async (s: Session) => {
    if (!(await confirmAction("Revoke this session?", <p>Its tokens stop working at once.</p>, "Revoke"))) return;
    if (await act.run(() => api.ops.deleteSession({ params: { path: { session_uuid: s.uuid } } }), "Session revoked."))
      reloadLists();
  };
  return (
    <Screen title="Sessions" intro="Every open session of this tenant and its sub-tenants.">
      <ErrorBox error={act.error} />
      {act.notice && <Notice text={act.notice} />}
      <PagedList<Session>
        label="Sessions"
        searchable={false}
        load={(q) => api.ops.listSessions({ params: { query: { ...q, recurse: true } } })}
        rowKey={(s) => s.uuid}
        columns={[
          { title: "Session", cell: (s) => <code title={s.uuid}>{shortId(s.uuid)}</code> },
          {
            title: "User",
            // A client's own session (client credentials, RFC 6749 §4.4) has no user.
            cell: (s) => (s.user_uuid ? <UserLink api={api} uuid={s.user_uuid} /> : <span>none (a client's own)</span>),
          },
          { title: "Mobile", cell: (s) => (s.mobile ? "yes" : "no") },
          {
            title: "Actions",
            cell: (s) =>
              api.can("auth.sessions.{session_uuid}.delete", { session_uuid: s.uuid }) && (
                <button
                  type="button"
                  class="danger"
                  onClick={() => void revoke(s)}
                  aria-label={`Revoke session ${shortId(s.uuid)}`}
                >
                  Revoke
                </button>
              ),
          },
        ]}
      />
    </Screen>
  );
}
