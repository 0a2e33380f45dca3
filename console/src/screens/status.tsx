// GET /0.1/status: each component and its state, as the service reports it.
import { Busy, ErrorBox, Screen, useAsync } from "../ui.tsx";
import type { ScreenProps } from "./index.tsx";

type Json = string | number | boolean | null | Json[] | { [k: string]: Json };

function Value({ value }: { value: Json }) {
  if (value === null || typeof value !== "object") {
    const text = String(value);
    const cls = text === "ok" ? "ok" : text === "fail" || text === "degraded" ? "bad" : "";
    return <span class={cls}>{text}</span>;
  }
  if (Array.isArray(value)) return <span>{value.map((v) => JSON.stringify(v)).join(", ") || "—"}</span>;
  return (
    <dl class="status">
      {Object.entries(value).map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>
            <Value value={v} />
          </dd>
        </div>
      ))}
    </dl>
  );
}

export function StatusScreen({ api }: ScreenProps) {
  const status = useAsync(() => api.ops.getStatus() as Promise<Json>, []);
  return (
    <Screen title="Status" intro="The state of the service and its components (GET /0.1/status).">
      {status.loading && <Busy />}
      <ErrorBox error={status.error} />
      {status.data !== undefined && <Value value={status.data} />}
      <p>
        <button type="button" onClick={status.reload}>
          Refresh
        </button>
      </p>
    </Screen>
  );
}
