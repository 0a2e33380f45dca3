// Initial access tokens (RFC 7591 §3, §1.2 "initial access token"): open registration is off, so a
// client registers itself only with one of these, issued by a tenant administrator. The token
// decides the tenant of the client and what it may register (its grant types); it is shown once,
// stored as its SHA-256, used at most `max_uses` times before `expires_at`, listed and revocable.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { and, asc, desc, eq, gt, gte, lt, or, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { listPage } from "../../db/paging.ts";
import { oidcInitialAccessTokens } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { collection, type Collection, type ListParams } from "../../domain/collection.ts";
import { invalidField, NotFound } from "../../domain/errors.ts";
import { recordAudit, resourceAudit } from "../audit/record.ts";
import { publishEvent, routingKey } from "../events.ts";
import { inCallerScope, tenantVisible } from "../identity/visibility.ts";

export type InitialAccessTokenRow = typeof oidcInitialAccessTokens.$inferSelect;

/** What a self-registered client may use when the token names nothing: the code flow and its refresh. */
export const DEFAULT_REGISTRATION_GRANTS = ["authorization_code", "refresh_token"];
/**
 * Grants a self-registered client may never have: `client_credentials` gives the client tokens of its
 * own, whose ACL an administrator grants (`acl`), and a self-registered client gets no ACL beyond
 * what its users consent to.
 */
export const UNREGISTRABLE_GRANTS = ["client_credentials"];

export interface InitialAccessTokenInput {
  max_uses: number;
  expires_in: number;
  grant_types?: string[];
}

export interface InitialAccessTokenJson {
  uuid: string;
  tenant_uuid: string;
  max_uses: number;
  uses: number;
  grant_types: string[];
  expires_at: string;
  created_at: string;
}

export function initialAccessTokenJson(r: InitialAccessTokenRow): InitialAccessTokenJson {
  return {
    uuid: r.uuid,
    tenant_uuid: r.tenantUuid,
    max_uses: r.maxUses,
    uses: r.uses,
    grant_types: r.grantTypes,
    expires_at: r.expiresAt.toISOString(),
    created_at: r.createdAt.toISOString(),
  };
}

const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");
const target = (r: InitialAccessTokenRow) => ({
  kind: "oidc_initial_access_token",
  uuid: r.uuid,
  tenantUuid: r.tenantUuid,
});

function tokenEvent(app: AppContext, tx: DbOrTx, action: "created" | "deleted", r: InitialAccessTokenRow) {
  return publishEvent(app, tx, {
    name: `auth_oidc_initial_access_token_${action}`,
    routingKey: routingKey(`auth.oidc.initial_access_tokens.{uuid}.${action}`, { uuid: r.uuid }),
    // Never the token nor its digest.
    data: { uuid: r.uuid, tenant_uuid: r.tenantUuid, max_uses: r.maxUses, expires_at: r.expiresAt.toISOString() },
    tenantUuid: r.tenantUuid,
    userUuid: "*",
    aggregate: `oidc_initial_access_token:${r.uuid}`,
  });
}

export async function createInitialAccessToken(
  app: AppContext,
  caller: Caller,
  input: InitialAccessTokenInput,
): Promise<InitialAccessTokenJson & { token: string }> {
  const tenantUuid = caller.tenantUuid;
  if (!tenantUuid) throw new NotFound("tenants");
  const grants = [...new Set(input.grant_types ?? DEFAULT_REGISTRATION_GRANTS)];
  const refused = grants.find((g) => UNREGISTRABLE_GRANTS.includes(g));
  if (refused)
    throw invalidField(
      "oidc_initial_access_tokens",
      "grant_types",
      "not_registrable",
      refused,
      "A self-registered client cannot use client_credentials: its tokens would carry an ACL no user consented to.",
    );
  // 256 random bits (RFC 6749 §10.10), shown in this answer only.
  const token = randomBytes(32).toString("base64url");
  return inTransaction(app, async (tx) => {
    const [row] = await tx
      .insert(oidcInitialAccessTokens)
      .values({
        uuid: randomUUID(),
        tenantUuid,
        tokenHash: hashToken(token),
        maxUses: input.max_uses,
        grantTypes: grants,
        expiresAt: new Date(Date.now() + input.expires_in * 1000),
      })
      .returning();
    await tokenEvent(app, tx, "created", row!);
    await recordAudit(
      app,
      tx,
      caller,
      resourceAudit("oidc_initial_access_token.create", target(row!), null, initialAccessTokenJson(row!)),
    );
    return { ...initialAccessTokenJson(row!), token };
  });
}

export type InitialAccessTokenFilter = never;
const SORT = { created_at: oidcInitialAccessTokens.createdAt, expires_at: oidcInitialAccessTokens.expiresAt } as const;

export async function listInitialAccessTokens(
  app: AppContext,
  caller: Caller,
  params: ListParams<InitialAccessTokenFilter>,
): Promise<Collection<InitialAccessTokenJson>> {
  const base = inCallerScope(app, caller, params.recurse, oidcInitialAccessTokens.tenantUuid);
  const column = SORT[(params.order ?? "created_at") as keyof typeof SORT] ?? oidcInitialAccessTokens.createdAt;
  const page = await listPage(
    app.db,
    oidcInitialAccessTokens,
    base,
    base,
    [params.direction === "desc" ? desc(column) : asc(column), asc(oidcInitialAccessTokens.uuid)],
    params,
  );
  return collection(page.rows.map(initialAccessTokenJson), page.filtered, page.total);
}

/** Revokes a token: the clients it registered stay (they are the tenant's, administered as any other). */
export async function deleteInitialAccessToken(app: AppContext, caller: Caller, uuid: string): Promise<void> {
  await inTransaction(app, async (tx) => {
    const [row] = await tx.select().from(oidcInitialAccessTokens).where(eq(oidcInitialAccessTokens.uuid, uuid));
    if (!row || !(await tenantVisible(app, caller, row.tenantUuid, tx))) return;
    await tx.delete(oidcInitialAccessTokens).where(eq(oidcInitialAccessTokens.uuid, uuid));
    await tokenEvent(app, tx, "deleted", row);
    await recordAudit(
      app,
      tx,
      caller,
      resourceAudit("oidc_initial_access_token.delete", target(row), initialAccessTokenJson(row), null),
    );
  });
}

/**
 * Spends one use of a presented initial access token, in the registration's transaction (a failed
 * registration gives the use back); null when it is unknown, expired or used up.
 */
export async function spendInitialAccessToken(tx: DbOrTx, token: string): Promise<InitialAccessTokenRow | null> {
  const [row] = await tx
    .update(oidcInitialAccessTokens)
    .set({ uses: sql`${oidcInitialAccessTokens.uses} + 1` })
    .where(
      and(
        eq(oidcInitialAccessTokens.tokenHash, hashToken(token)),
        lt(oidcInitialAccessTokens.uses, oidcInitialAccessTokens.maxUses),
        gt(oidcInitialAccessTokens.expiresAt, new Date()),
      ),
    )
    .returning();
  return row ?? null;
}

/**
 * The cleanup job's purge (boot/jobs.ts): tokens past `expires_at` or used `max_uses` times can
 * register nothing more; the clients they registered keep their own registration access tokens.
 */
export async function purgeSpentInitialAccessTokens(app: AppContext): Promise<number> {
  const gone = await app.db
    .delete(oidcInitialAccessTokens)
    .where(
      or(
        lt(oidcInitialAccessTokens.expiresAt, new Date()),
        gte(oidcInitialAccessTokens.uses, oidcInitialAccessTokens.maxUses),
      ),
    )
    .returning({ uuid: oidcInitialAccessTokens.uuid });
  return gone.length;
}
