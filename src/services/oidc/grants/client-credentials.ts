// RFC 6749 §4.4: a confidential client's own token, with the client's ACL.
import type { AppContext } from "../../../boot/context.ts";
import { oidcAccessTokens } from "../../../db/schema.ts";
import { auditInsert, auditOutboxInsert } from "../../audit/record.ts";
import { insertToken } from "../../auth/tokens.ts";
import { sessionCreatedEvent } from "../../events.ts";
import { aclScopes, narrowAcl } from "../acl-scope.ts";
import type { ClientRow } from "../clients.ts";
import {
  clientActor,
  clientAuthId,
  type Form,
  type RequestOrigin,
  requestedScope,
  type TokenResponse,
} from "../grants.ts";
import { OAuthError } from "../oauth-error.ts";
import type { Grant } from "./grant.ts";

export const clientCredentialsGrant: Grant<"client_credentials"> = {
  type: "client_credentials",
  parameters: ["scope"],
  handle: (app, client, form, { origin }) => clientCredentialsToken(app, client, form, origin),
};

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * RFC 6749 §4.4: a confidential client's own token — a Tessera session of the client as a service
 * principal, with the ACL of the client (`acl`, set by an administrator under the grant rule),
 * narrowed by the ACL scopes asked for. No refresh token (§4.4.3), no ID token (no user).
 */
export async function clientCredentialsToken(
  app: AppContext,
  client: ClientRow,
  form: Form,
  origin: RequestOrigin,
): Promise<TokenResponse> {
  if (client.clientType !== "confidential")
    throw new OAuthError(400, "unauthorized_client", "confidential clients only");
  const scope = requestedScope(client, form.scope, []).filter((s) => s.startsWith("acl:"));
  const authId = clientAuthId(client.clientId);
  const acl = narrowAcl(client.acl, aclScopes(scope), { authId });
  const expiration = client.accessTokenLifetime ?? app.config.default_token_lifetime;
  const tokenUuid = crypto.randomUUID();
  // One statement, so one round trip and atomic on its own: the session, its event, the token, the
  // token's record and the client's login in the audit trail (with its bus copy) — all or nothing.
  const issued = await insertToken(
    app,
    app.db,
    {
      uuid: tokenUuid,
      authId,
      pbxUserUuid: null,
      acl,
      metadata: { auth_id: authId, tenant_uuid: client.tenantUuid, purpose: "oidc_client", client_id: client.clientId },
      expiration,
      userAgent: origin.userAgent,
      remoteAddr: origin.remoteAddr,
      sessionTenantUuid: client.tenantUuid,
      mobile: false,
    },
    (sessionUuid) =>
      sessionCreatedEvent({ uuid: sessionUuid, tenantUuid: client.tenantUuid, userUuid: null, mobile: false }),
    (sessionUuid) => {
      // The client's login: a decision like a user's (its service principal has no user uuid).
      const actor = clientActor(origin, client.tenantUuid, sessionUuid);
      const entry = {
        action: "login.success",
        target: { kind: "oidc_client", uuid: client.clientId, tenantUuid: client.tenantUuid },
        changes: [{ field: "grant_type", old: null, new: "client_credentials" }],
      };
      const record = { tokenUuid, sessionUuid, clientId: client.clientId, userUuid: null };
      return [
        { table: oidcAccessTokens, row: { ...record, grantType: "client_credentials", scope: scope.join(" ") } },
        auditInsert(app, app.db, actor, entry),
        auditOutboxInsert(app, app.db, actor, entry),
      ];
    },
  );
  return {
    access_token: issued.record.uuid,
    token_type: "Bearer",
    expires_in: Math.max(0, Math.floor(issued.expiresAt - nowSeconds())),
    scope: scope.join(" "),
  };
}
