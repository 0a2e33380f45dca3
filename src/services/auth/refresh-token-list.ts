// Refresh tokens through the API (wazo-auth's refresh-token API): list per tenant or per user, delete by
// client id. The refresh token itself (its uuid) is never listed.
import { and, asc, desc, eq, ilike, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { refreshTokens, users } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { collection, searchPattern, type Collection, type ListParams } from "../../domain/collection.ts";
import { NotFound, orAbsent } from "../../domain/errors.ts";
import { publishEvent } from "../events.ts";
import { changesOf, recordAudit } from "../audit/record.ts";
import { refreshTokenEvent } from "./refresh-tokens.ts";
import { isoTime } from "../../domain/time.ts";
import { requireVisibleUser, inCallerScope } from "../identity/visibility.ts";
import { noticeFamiliesEnding } from "../oidc/backchannel.ts";

export interface RefreshTokenJson {
  client_id: string;
  created_at: string;
  mobile: boolean;
  user_uuid: string;
  tenant_uuid: string;
  metadata: Record<string, unknown>;
}

export type RefreshTokenFilter = "client_id" | "created_at" | "mobile";

const COLUMNS = {
  created_at: refreshTokens.createdAt,
  client_id: refreshTokens.clientId,
  mobile: refreshTokens.mobile,
} as const;
const createdAtText = sql<string>`to_char(${refreshTokens.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') || '+00:00'`;

async function list(
  app: AppContext,
  base: SQL,
  params: ListParams<RefreshTokenFilter>,
): Promise<Collection<RefreshTokenJson>> {
  const conditions: SQL[] = [base];
  const pattern = searchPattern(params.search);
  if (pattern) conditions.push(ilike(refreshTokens.clientId, pattern));
  if (params.filters.client_id !== undefined) conditions.push(eq(refreshTokens.clientId, params.filters.client_id));
  if (params.filters.mobile !== undefined)
    conditions.push(sql`${refreshTokens.mobile}::text = ${params.filters.mobile}`);
  if (params.filters.created_at !== undefined) conditions.push(sql`${createdAtText} = ${params.filters.created_at}`);
  const filtered = and(...conditions);
  const column = COLUMNS[(params.order ?? "created_at") as keyof typeof COLUMNS] ?? refreshTokens.createdAt;
  let query = app.db
    .select({ rt: refreshTokens, tenantUuid: users.tenantUuid })
    .from(refreshTokens)
    .innerJoin(users, eq(users.uuid, refreshTokens.userUuid))
    .where(filtered)
    .orderBy(params.direction === "desc" ? desc(column) : asc(column), asc(refreshTokens.uuid))
    .offset(params.offset)
    .$dynamic();
  if (params.limit !== undefined) query = query.limit(params.limit);
  const count = (where: SQL | undefined) =>
    app.db
      .select({ n: sql<number>`count(*)::int` })
      .from(refreshTokens)
      .innerJoin(users, eq(users.uuid, refreshTokens.userUuid))
      .where(where);
  const [rows, [total], [matching]] = await Promise.all([query, count(base), count(filtered)]);
  const items = rows.map(({ rt, tenantUuid }) => ({
    client_id: rt.clientId,
    created_at: `${isoTime(rt.createdAt.getTime() / 1000, true, true)}+00:00`,
    mobile: rt.mobile,
    user_uuid: rt.userUuid,
    tenant_uuid: tenantUuid,
    metadata: (rt.metadata as Record<string, unknown>) ?? {},
  }));
  return collection(items, matching?.n ?? 0, total?.n ?? 0);
}

export async function listRefreshTokens(app: AppContext, caller: Caller, params: ListParams<RefreshTokenFilter>) {
  return list(app, inCallerScope(app, caller, params.recurse, users.tenantUuid), params);
}

/** `me` is the caller's own user (404 for tokens without one). */
export function resolveUser(caller: Caller, userUuid: string): string {
  if (userUuid !== "me") return userUuid;
  if (!caller.userUuid) throw new NotFound("users", "me");
  return caller.userUuid;
}

export async function listUserRefreshTokens(
  app: AppContext,
  caller: Caller,
  userUuid: string,
  params: ListParams<RefreshTokenFilter>,
) {
  const user = await requireVisibleUser(app, caller, resolveUser(caller, userUuid));
  return list(app, eq(refreshTokens.userUuid, user.uuid), params);
}

/** Deletes the user's refresh token for `clientId` (sessions issued from it stay, §5.6); absent or unseen → nothing (D4 of docs/wazo-auth-differences.md). */
export async function deleteUserRefreshToken(
  app: AppContext,
  caller: Caller,
  userUuid: string,
  clientId: string,
): Promise<void> {
  const user = await orAbsent(requireVisibleUser(app, caller, resolveUser(caller, userUuid)));
  if (!user) return;
  await inTransaction(app, async (tx) => {
    const which = and(eq(refreshTokens.userUuid, user.uuid), eq(refreshTokens.clientId, clientId))!;
    // An OpenID Connect client's family is its offline grant: the client is told it ended (back-channel logout).
    await noticeFamiliesEnding(app, tx, which);
    const deleted = await tx.delete(refreshTokens).where(which).returning();
    for (const rt of deleted) {
      await publishEvent(app, tx, refreshTokenEvent("deleted", rt, user.tenantUuid));
      await recordAudit(app, tx, caller, {
        action: "refresh_token.delete",
        // Never the refresh token's uuid: it is the refresh token itself (§5.6).
        target: { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid },
        changes: changesOf({ client_id: rt.clientId }, null),
      });
    }
  });
}
