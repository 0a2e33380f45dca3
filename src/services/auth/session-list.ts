// Listing and deleting sessions through the API (wazo-auth's session API), within the caller's tenants.
import { and, asc, desc, eq, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { sessions, tokens } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { changesOf, recordAudit } from "../audit/record.ts";
import type { Caller } from "../../domain/caller.ts";
import { collection, type Collection, type ListParams } from "../../domain/collection.ts";
import { isUuid } from "../../domain/validate.ts";
import { orAbsent } from "../../domain/errors.ts";
import { revokeSessions } from "./sessions.ts";
import { requireVisibleUser, inCallerScope, tenantVisible } from "../identity/visibility.ts";

export interface SessionJson {
  uuid: string;
  mobile: boolean;
  tenant_uuid: string;
  user_uuid: string | null;
}

// Correlated subquery: written with qualified names, as drizzle leaves interpolated columns bare.
const ownerAuthId = sql<
  string | null
>`(select t.auth_id from auth_token t where t.session_uuid = auth_session.uuid limit 1)`;
const sessionsOfAuthId = (authId: string) =>
  sql`${sessions.uuid} in (select ${tokens.sessionUuid} from ${tokens} where ${tokens.authId} = ${authId})`;

async function listWhere(
  app: AppContext,
  where: SQL | undefined,
  params: ListParams,
): Promise<Collection<SessionJson>> {
  const order =
    params.order === "mobile"
      ? [params.direction === "desc" ? desc(sessions.mobile) : asc(sessions.mobile), asc(sessions.uuid)]
      : [asc(sessions.uuid)];
  let query = app.db
    .select({ uuid: sessions.uuid, mobile: sessions.mobile, tenantUuid: sessions.tenantUuid, authId: ownerAuthId })
    .from(sessions)
    .where(where)
    .orderBy(...order)
    .offset(params.offset)
    .$dynamic();
  if (params.limit !== undefined) query = query.limit(params.limit);
  const [rows, [count]] = await Promise.all([
    query,
    app.db.select({ n: sql<number>`count(*)::int` }).from(sessions).where(where),
  ]);
  const items = rows.map((r) => ({
    uuid: r.uuid,
    mobile: r.mobile,
    tenant_uuid: r.tenantUuid,
    user_uuid: r.authId && isUuid(r.authId) ? r.authId : null,
  }));
  return collection(items, count?.n ?? 0, count?.n ?? 0);
}

export async function listSessions(
  app: AppContext,
  caller: Caller,
  params: ListParams,
): Promise<Collection<SessionJson>> {
  return listWhere(app, inCallerScope(app, caller, params.recurse, sessions.tenantUuid), params);
}

export async function listUserSessions(
  app: AppContext,
  caller: Caller,
  userUuid: string,
  params: ListParams,
): Promise<Collection<SessionJson>> {
  await requireVisibleUser(app, caller, userUuid);
  return listWhere(app, sessionsOfAuthId(userUuid), params);
}

/** Deletes a session the caller can see; anything else is left alone, and the answer is the same. */
export async function deleteSession(
  app: AppContext,
  caller: Caller,
  sessionUuid: string,
  ofUser?: string,
): Promise<void> {
  if (ofUser && !(await orAbsent(requireVisibleUser(app, caller, ofUser)))) return;
  await inTransaction(app, async (tx) => {
    const [s] = await tx
      .select({ tenantUuid: sessions.tenantUuid })
      .from(sessions)
      .where(eq(sessions.uuid, sessionUuid));
    if (!s || !(await tenantVisible(app, caller, s.tenantUuid, tx))) return;
    const where = ofUser
      ? and(eq(sessions.uuid, sessionUuid), sessionsOfAuthId(ofUser))!
      : eq(sessions.uuid, sessionUuid);
    const revoked = await revokeSessions(app, tx, where);
    for (const r of revoked)
      await recordAudit(app, tx, caller, {
        action: "session.delete",
        target: { kind: "session", uuid: r.uuid, tenantUuid: r.tenantUuid },
        changes: changesOf({ user_uuid: r.userUuid }, null),
      });
  });
}
