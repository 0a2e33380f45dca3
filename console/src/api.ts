// The console's one way to the service: the typed client (clients/typescript) with the signed-in
// user's token, acting in the chosen tenant (Wazo-Tenant). Buttons ask `can()` with the same ACL
// templates the routes declare; the API still decides, and its refusal is shown as it comes.
import { aclMatches, fillAcl } from "../../src/domain/acl.ts";
import { grantCheck, type GrantCheck } from "../../src/domain/acl-grant.ts";
import { TesseraClient, TesseraError } from "../../clients/typescript/index.ts";
import { BASE_URL } from "./auth.ts";

export { TesseraError };

export interface Me {
  token: string;
  userUuid: string;
  sessionUuid: string;
  tenantUuid: string;
  name: string;
  acl: string[];
  expiresAt: string;
}

export class Api {
  readonly client: TesseraClient;
  readonly grant: GrantCheck;
  constructor(
    readonly me: Me,
    readonly tenant: string,
  ) {
    this.client = new TesseraClient({ baseUrl: BASE_URL, token: me.token, tenant });
    this.grant = grantCheck(me.acl, { authId: me.userUuid, sessionUuid: me.sessionUuid });
  }
  get ops() {
    return this.client.ops;
  }
  /** Would the API let this token through a route declaring `template` (e.g. `auth.users.{user_uuid}.read`)? */
  can(template: string, params: Record<string, string> = {}): boolean {
    return aclMatches(this.me.acl, fillAcl(template, params), {
      authId: this.me.userUuid,
      sessionUuid: this.me.sessionUuid,
    });
  }
  /** What the typed client does not fit (the SAML screen: XML, a 404 meaning "none"): the same headers, plain fetch. */
  async raw(method: string, path: string, query: Record<string, string> = {}): Promise<Response> {
    const q = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== ""));
    return fetch(`${BASE_URL}/0.1${path}${q.size ? `?${q}` : ""}`, {
      method,
      headers: { "X-Auth-Token": this.me.token, "Wazo-Tenant": this.tenant, Accept: "application/json" },
    });
  }
}

/** Who the token belongs to and what it may do: GET /0.1/token/{token}. */
export async function loadMe(token: string): Promise<Me> {
  const client = new TesseraClient({ baseUrl: BASE_URL, token });
  const info = (await client.ops.getToken({ params: { path: { token } } })) as unknown as {
    data: {
      auth_id: string;
      session_uuid: string;
      acl: string[];
      expires_at: string;
      metadata: Record<string, unknown>;
    };
  };
  const d = info.data;
  return {
    token,
    userUuid: d.auth_id,
    sessionUuid: d.session_uuid,
    tenantUuid: String(d.metadata.tenant_uuid ?? ""),
    name: String(d.metadata.username ?? d.metadata.uuid ?? d.auth_id),
    acl: d.acl ?? [],
    expiresAt: d.expires_at,
  };
}

export interface ErrorView {
  message: string;
  fields: Record<string, string>;
  status?: number;
}

/** A readable error from the API's body (docs/api.md): its message, and field by field for 400s. */
export function errorView(e: unknown): ErrorView {
  if (e instanceof TesseraError) {
    const body = e.body;
    const fields: Record<string, string> = {};
    const details = (body?.details ?? {}) as Record<string, unknown>;
    for (const [field, d] of Object.entries(details)) {
      if (d && typeof d === "object" && "message" in d) fields[field] = String((d as { message: unknown }).message);
      else if (typeof d === "string") fields[field] = d;
    }
    let message = body?.message ?? `The service answered ${e.status}.`;
    if (e.status === 403 && typeof details.required_access === "string")
      message = `Not allowed: your access does not include ${details.required_access}.`;
    else if (e.status === 403) message = `Not allowed: ${message}`;
    else if (e.status === 401 && typeof details.reason === "string")
      message = `Not allowed: ${message} (${details.reason}).`;
    else if (e.status === 401) message = "Your session has ended. Sign in again.";
    else if (e.status >= 500) message = `The service could not answer (${e.status}): ${message}`;
    delete fields.required_access;
    delete fields.reason;
    return { message, fields, status: e.status };
  }
  if (e instanceof TypeError)
    return { message: "The service cannot be reached. Check the network and retry.", fields: {} };
  return { message: e instanceof Error ? e.message : String(e), fields: {} };
}
