// The bearer tokens of a tenant's directory (docs/scim.md): Microsoft Entra ID's "Secret Token" and
// Okta's HTTP header authentication expect one long-lived token. An administrator creates it for
// the scoping tenant; the secret is shown once and only its SHA-256 is stored. The token acts in
// its tenant with the ACL its creator gave it (default `auth.scim.#`), under the grant rule: its
// creator must hold every entry, so SCIM can never attach what its creator could not grant.
import { createHash, randomBytes } from "node:crypto";
import { and, asc, eq, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { scimTokens } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { compileAcl } from "../../domain/acl.ts";
import type { Caller } from "../../domain/caller.ts";
import { NotFound } from "../../domain/errors.ts";
import type { CachedToken } from "../auth/token-cache.ts";
import { recordAudit } from "../audit/record.ts";
import { publishEvent, routingKey } from "../events.ts";
import { requireGrant } from "../identity/policies.ts";
import { inCallerScope, tenantVisible } from "../identity/visibility.ts";

/** Every SCIM token starts so: the bearer check tells it from a Tessera token (a UUID) without a lookup. */
export const SCIM_TOKEN_PREFIX = "tscim_";
export const DEFAULT_SCIM_ACL = ["auth.scim.#"];

export interface ScimTokenJson {
  uuid: string;
  name: string;
  tenant_uuid: string;
  acl: string[];
  created_at: string;
  last_used_at: string | null;
}

type Row = typeof scimTokens.$inferSelect;

const hashOf = (secret: string) => createHash("sha256").update(secret).digest("hex");

const json = (r: Row): ScimTokenJson => ({
  uuid: r.uuid,
  name: r.name,
  tenant_uuid: r.tenantUuid,
  acl: r.acl,
  created_at: r.createdAt.toISOString(),
  last_used_at: r.lastUsedAt?.toISOString() ?? null,
});

function tokenEvent(r: Row, kind: "created" | "deleted") {
  return {
    name: `auth_scim_token_${kind}`,
    routingKey: routingKey(`auth.scim.tokens.{uuid}.${kind}`, { uuid: r.uuid }),
    data: { uuid: r.uuid, name: r.name, tenant_uuid: r.tenantUuid },
    tenantUuid: r.tenantUuid,
    userUuid: "*",
    aggregate: `scim_token:${r.uuid}`,
  };
}

/** POST /scim/tokens: a token of the scoping tenant; its secret is in this answer only. */
export async function createScimToken(
  app: AppContext,
  caller: Caller,
  input: { name: string; acl?: string[] },
): Promise<ScimTokenJson & { token: string }> {
  const tenantUuid = caller.tenantUuid;
  if (!tenantUuid) throw new NotFound("tenants");
  const acl = input.acl ?? DEFAULT_SCIM_ACL;
  requireGrant(caller, acl, [], "scim_tokens");
  const secret = `${SCIM_TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
  return inTransaction(app, async (tx) => {
    const [row] = await tx
      .insert(scimTokens)
      .values({ tenantUuid, name: input.name, acl, tokenHash: hashOf(secret), createdBy: caller.userUuid })
      .returning();
    await recordAudit(app, tx, caller, {
      action: "scim_token.create",
      target: { kind: "scim_token", uuid: row!.uuid, tenantUuid },
      changes: [
        { field: "name", old: null, new: row!.name },
        { field: "acl", old: null, new: row!.acl },
      ],
    });
    await publishEvent(app, tx, tokenEvent(row!, "created"));
    return { ...json(row!), token: secret };
  });
}

/** The tokens of the scoping tenant (never their secrets). */
export async function listScimTokens(app: AppContext, caller: Caller): Promise<ScimTokenJson[]> {
  const rows = await app.db
    .select()
    .from(scimTokens)
    .where(inCallerScope(app, caller, false, scimTokens.tenantUuid))
    .orderBy(asc(scimTokens.createdAt), asc(scimTokens.uuid));
  return rows.map(json);
}

/** DELETE /scim/tokens/{uuid}: the directory's next request is refused; absent or unseen → nothing (D4). */
export async function revokeScimToken(app: AppContext, caller: Caller, uuid: string): Promise<void> {
  await inTransaction(app, async (tx) => {
    const [row] = await tx.select().from(scimTokens).where(eq(scimTokens.uuid, uuid)).for("update");
    if (!row || !(await tenantVisible(app, caller, row.tenantUuid, tx))) return;
    await tx.delete(scimTokens).where(eq(scimTokens.uuid, uuid));
    await recordAudit(app, tx, caller, {
      action: "scim_token.delete",
      target: { kind: "scim_token", uuid, tenantUuid: row.tenantUuid },
      changes: [{ field: "name", old: row.name, new: null }],
    });
    await publishEvent(app, tx, tokenEvent(row, "deleted"));
  });
}

/**
 * The caller a SCIM token acts as, or null when no such token exists (revoked: its row is gone,
 * so every instance refuses it at its next request). The token stands as its own session: the
 * audit trail names it as the actor's session.
 */
export async function scimTokenCaller(app: AppContext, secret: string): Promise<Caller | null> {
  if (!secret.startsWith(SCIM_TOKEN_PREFIX) || secret.length > 256) return null;
  const [row] = await app.db
    .select()
    .from(scimTokens)
    .where(eq(scimTokens.tokenHash, hashOf(secret)))
    .limit(1);
  if (!row) return null;
  // At most one write a minute per token, not one per request (nor one statement: a directory
  // provisioning a tenant sends hundreds of requests a second with the same token).
  if (!row.lastUsedAt || Date.now() - row.lastUsedAt.getTime() >= 60_000)
    await app.db
      .update(scimTokens)
      .set({ lastUsedAt: sql`now()` })
      .where(
        and(
          eq(scimTokens.uuid, row.uuid),
          sql`(${scimTokens.lastUsedAt} is null or ${scimTokens.lastUsedAt} < now() - interval '1 minute')`,
        ),
      );
  const authId = `scim:${row.uuid}`;
  const token: CachedToken = {
    uuid: row.uuid,
    authId,
    pbxUserUuid: null,
    xivoUuid: app.xivoUuid,
    issuedT: Math.trunc(row.createdAt.getTime() / 1000),
    expireT: Number.MAX_SAFE_INTEGER,
    acl: row.acl,
    metadata: { tenant_uuid: row.tenantUuid, scim_token_uuid: row.uuid, purpose: "scim" },
    userAgent: "",
    remoteAddr: "",
    sessionUuid: row.uuid,
    refreshTokenUuid: null,
    dpopJkt: null, // a SCIM token is a bearer secret the directory holds (RFC 7644 §2)
    matcher: compileAcl(row.acl, { authId, sessionUuid: row.uuid }),
    userTenantUuid: row.tenantUuid,
  };
  return { token, userUuid: null, tenantUuid: row.tenantUuid, ownTenantUuid: row.tenantUuid };
}
