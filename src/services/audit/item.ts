// One entry of GET /0.1/audit as the API answers it. Imports nothing, so the console's page shares
// this type with the service (docs/audit.md).
export interface AuditItem {
  uuid: string;
  time: string;
  actor: {
    user_uuid: string | null;
    session_uuid: string | null;
    tenant_uuid: string | null;
    address: string | null;
    user_agent: string | null;
  };
  action: string;
  target: { kind: string | null; uuid: string | null; tenant_uuid: string | null };
  outcome: string;
  changes: Array<{ field: string; old: unknown; new: unknown }>;
}
