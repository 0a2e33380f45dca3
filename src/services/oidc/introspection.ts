// Token introspection (RFC 7662) and revocation (RFC 7009) for authenticated clients. Introspection
// answers for every Tessera token, but only about users of the client's tenant and its sub-tenants:
// anything else is `{active: false}`, the same answer as an unknown token (§2.2).
import type { AppContext } from "../../context.ts";
import { isUuid } from "../../domain/validate.ts";
import { revokeToken } from "../auth/sessions.ts";
import { findValidToken, isTokenShaped } from "../auth/tokens.ts";
import type { ClientRow } from "./clients.ts";
import { grantOfToken } from "./userinfo.ts";

const INACTIVE = { active: false } as const;

export async function introspectToken(
  app: AppContext,
  client: ClientRow,
  token: string,
  issuer: string,
): Promise<Record<string, unknown>> {
  if (!isTokenShaped(token)) return INACTIVE;
  const tok = await findValidToken(app, token);
  if (!tok) return INACTIVE;
  const tenantUuid = typeof tok.metadata.tenant_uuid === "string" ? tok.metadata.tenant_uuid : null;
  if (!tenantUuid || !(await app.tenantTree.isSubtenant(app.db, tenantUuid, client.tenantUuid))) return INACTIVE;
  const grant = await grantOfToken(app, token);
  // RFC 7662 §2.2 members; `tenant_uuid` and `session_uuid` are Tessera's.
  const answer: Record<string, unknown> = {
    active: true,
    token_type: "Bearer",
    exp: tok.expireT,
    iat: tok.issuedT,
    iss: issuer,
    tenant_uuid: tenantUuid,
    session_uuid: tok.sessionUuid,
  };
  if (isUuid(tok.authId)) answer.sub = tok.authId;
  if (grant) {
    answer.scope = grant.scope.join(" ");
    answer.client_id = grant.clientId;
  }
  return answer;
}

/**
 * RFC 7009 §2.1: a client revokes the tokens issued to it (the token and its session go). Anything
 * else — unknown, expired, another client's, a plain Tessera token — is answered the same 200
 * (§2.2) and left alone.
 */
export async function revokeClientToken(app: AppContext, client: ClientRow, token: string): Promise<void> {
  if (!isTokenShaped(token)) return;
  const grant = await grantOfToken(app, token);
  if (grant?.clientId === client.clientId) await revokeToken(app, token);
}
