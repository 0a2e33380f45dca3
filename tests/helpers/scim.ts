// SCIM requests as a directory sends them: `Authorization: Bearer`, application/scim+json bodies.
import type { TestApp, TestResponse } from "./app.ts";

export const SCIM = "/0.1/scim/v2";
export const USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User";
export const GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group";
export const ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
export const PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
export const ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error";

export function scim(
  t: TestApp,
  bearer: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<TestResponse> {
  return t.request(method, `${SCIM}${path}`, {
    headers: {
      Authorization: `Bearer ${bearer}`,
      ...(body !== undefined ? { "Content-Type": "application/scim+json" } : {}),
      ...headers,
    },
    rawBody: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** A SCIM token of `tenant`, created through the REST API by `admin`. */
export async function scimToken(t: TestApp, admin: string, tenant: string, acl?: string[]): Promise<string> {
  const r = await t.request("POST", "/0.1/scim/tokens", {
    token: admin,
    tenant,
    body: { name: `directory-${crypto.randomUUID().slice(0, 6)}`, ...(acl ? { acl } : {}) },
  });
  if (r.status !== 201) throw new Error(`scim token: ${r.status} ${r.text}`);
  return r.json.token as string;
}

export const patchOf = (...ops: unknown[]) => ({ schemas: [PATCH_OP], Operations: ops });
