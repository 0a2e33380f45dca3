// Storage of external-auth links (wazo-auth's external-auth API, external-auth plugins): per user and type, the record of
// the external service's credentials; per tenant and type, the configuration; events on change.
import { and, asc, eq, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { externalAuthConfigs, externalAuthTypes, userExternalAuths, users } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { changesOf, recordAudit, secretChange, type AuditEntry } from "../audit/record.ts";
import type { Caller } from "../../domain/caller.ts";
import { collection, type Collection, type ListParams } from "../../domain/collection.ts";
import { Conflict, NotFound } from "../../domain/errors.ts";
import { publishEvent, routingKey } from "../events.ts";
import { requireVisibleUser, inCallerScope } from "../identity/visibility.ts";

const parse = (text: string | null): Record<string, unknown> => {
  try {
    const v = text ? JSON.parse(text) : {};
    return v && typeof v === "object" ? v : {};
  } catch {
    return {};
  }
};

/** Registers the loaded plugins' types (enabled) and disables the others. */
export async function registerTypes(app: AppContext, names: string[]): Promise<void> {
  await inTransaction(app, async (tx) => {
    await tx.update(externalAuthTypes).set({ enabled: false });
    for (const name of names) {
      await tx
        .insert(externalAuthTypes)
        .values({ name, enabled: true })
        .onConflictDoUpdate({ target: externalAuthTypes.name, set: { enabled: true } });
    }
  });
}

async function typeUuid(db: DbOrTx, name: string): Promise<string> {
  const [t] = await db.select().from(externalAuthTypes).where(eq(externalAuthTypes.name, name));
  if (!t) throw new NotFound("external", name, `No such external auth type: "${name}"`);
  return t.uuid;
}

export function externalEvent(
  app: AppContext,
  tx: DbOrTx,
  kind: "created" | "updated" | "deleted" | "authorized",
  userUuid: string,
  tenantUuid: string,
  type: string,
) {
  const name = {
    created: "auth_user_external_auth_added",
    updated: "auth_user_external_auth_updated",
    deleted: "auth_user_external_auth_deleted",
    authorized: "auth_user_external_auth_authorized",
  }[kind];
  return publishEvent(app, tx, {
    name,
    routingKey: routingKey(`auth.users.{user_uuid}.external.{name}.${kind}`, { user_uuid: userUuid, name: type }),
    data: { user_uuid: userUuid, external_auth_name: type },
    tenantUuid,
    userUuid,
    aggregate: `user:${userUuid}`,
  });
}

export async function getUserData(db: DbOrTx, type: string, userUuid: string): Promise<Record<string, unknown> | null> {
  const [row] = await db
    .select({ data: userExternalAuths.data })
    .from(userExternalAuths)
    .innerJoin(externalAuthTypes, eq(externalAuthTypes.uuid, userExternalAuths.externalAuthTypeUuid))
    .where(and(eq(externalAuthTypes.name, type), eq(userExternalAuths.userUuid, userUuid)));
  return row ? parse(row.data) : null;
}

/** Writes a user's record: `mode` create (409 if present), update (404 if absent) or upsert. */
export async function writeUserData(
  app: AppContext,
  type: string,
  userUuid: string,
  data: Record<string, unknown>,
  mode: "create" | "update" | "upsert",
): Promise<void> {
  await inTransaction(app, async (tx) => {
    const [user] = await tx.select({ tenantUuid: users.tenantUuid }).from(users).where(eq(users.uuid, userUuid));
    if (!user) throw new NotFound("users", userUuid);
    const tUuid = await typeUuid(tx, type);
    const exists = (await getUserData(tx, type, userUuid)) !== null;
    if (exists && mode === "create")
      throw new Conflict(type, {
        type: { constraint_id: "unique", constraint: type, message: `The user already has "${type}" data` },
      });
    if (!exists && mode === "update") throw new NotFound(type, userUuid, `No "${type}" data for this user`);
    if (exists)
      await tx
        .update(userExternalAuths)
        .set({ data: JSON.stringify(data) })
        .where(and(eq(userExternalAuths.userUuid, userUuid), eq(userExternalAuths.externalAuthTypeUuid, tUuid)));
    else
      await tx.insert(userExternalAuths).values({ userUuid, externalAuthTypeUuid: tUuid, data: JSON.stringify(data) });
    await externalEvent(app, tx, exists ? "updated" : "created", userUuid, user.tenantUuid, type);
  });
}

export async function deleteUserData(app: AppContext, type: string, userUuid: string): Promise<void> {
  await inTransaction(app, async (tx) => {
    const tUuid = await typeUuid(tx, type);
    const deleted = await tx
      .delete(userExternalAuths)
      .where(and(eq(userExternalAuths.userUuid, userUuid), eq(userExternalAuths.externalAuthTypeUuid, tUuid)))
      .returning();
    if (deleted.length === 0) return; // already absent: the desired state (D4 of docs/wazo-auth-differences.md)
    const [user] = await tx.select({ tenantUuid: users.tenantUuid }).from(users).where(eq(users.uuid, userUuid));
    await externalEvent(app, tx, "deleted", userUuid, user?.tenantUuid ?? app.topTenantUuid, type);
  });
}

/** GET /users/{u}/external: every enabled type, with the record through the plugin's safe view. */
export async function listUserExternal(
  app: AppContext,
  caller: Caller,
  userUuid: string,
  params: ListParams<"type">,
): Promise<Collection<Record<string, unknown>>> {
  await requireVisibleUser(app, caller, userUuid);
  const types = await app.db
    .select()
    .from(externalAuthTypes)
    .where(eq(externalAuthTypes.enabled, true))
    .orderBy(asc(externalAuthTypes.name));
  const stored = await app.db.select().from(userExternalAuths).where(eq(userExternalAuths.userUuid, userUuid));
  const all = types.map((t) => {
    const plugin = app.plugins.externalAuth.get(t.name);
    const row = stored.find((s) => s.externalAuthTypeUuid === t.uuid);
    const safe = plugin?.safeView?.safeParse(parse(row?.data ?? null));
    return {
      type: t.name,
      data: safe?.success ? safe.data : {},
      enabled: Boolean(row),
      plugin_info: plugin?.pluginInfo ?? {},
    };
  });
  const search = params.search?.toLowerCase();
  let items = all.filter(
    (i) =>
      (search ? i.type.toLowerCase().includes(search) : true) &&
      (params.filters.type === undefined || i.type === params.filters.type),
  );
  const filtered = items.length;
  if (params.direction === "desc") items = items.reverse();
  items = items.slice(params.offset, params.limit === undefined ? undefined : params.offset + params.limit);
  return collection(items, filtered, all.length);
}

export async function getTenantConfig(
  db: DbOrTx,
  type: string,
  tenantUuid: string,
): Promise<Record<string, unknown> | null> {
  const [row] = await db
    .select({ data: externalAuthConfigs.data })
    .from(externalAuthConfigs)
    .innerJoin(externalAuthTypes, eq(externalAuthTypes.uuid, externalAuthConfigs.typeUuid))
    .where(and(eq(externalAuthTypes.name, type), eq(externalAuthConfigs.tenantUuid, tenantUuid)));
  return row ? parse(row.data) : null;
}

/** POST (create) / PUT (replace) the scoping tenant's config of a type. */
export async function writeTenantConfig(
  app: AppContext,
  caller: Caller,
  type: string,
  data: Record<string, unknown>,
  mode: "create" | "update",
): Promise<void> {
  const tenantUuid = caller.tenantUuid;
  if (!tenantUuid) throw new NotFound("tenants");
  await inTransaction(app, async (tx) => {
    const tUuid = await typeUuid(tx, type);
    const before = await getTenantConfig(tx, type, tenantUuid);
    const exists = before !== null;
    if (exists && mode === "create")
      throw new Conflict(type, {
        type: {
          constraint_id: "unique",
          constraint: type,
          message: `The tenant already has a "${type}" configuration`,
        },
      });
    if (!exists && mode === "update")
      throw new NotFound(type, tenantUuid, `No "${type}" configuration for this tenant`);
    if (exists)
      await tx
        .update(externalAuthConfigs)
        .set({ data: JSON.stringify(data) })
        .where(and(eq(externalAuthConfigs.tenantUuid, tenantUuid), eq(externalAuthConfigs.typeUuid, tUuid)));
    else await tx.insert(externalAuthConfigs).values({ tenantUuid, typeUuid: tUuid, data: JSON.stringify(data) });
    await recordAudit(
      app,
      tx,
      caller,
      configAudit(`external_auth.${exists ? "update" : "create"}`, type, tenantUuid, before, data),
    );
  });
}

/** A tenant's external-auth configuration holds credentials: its changed keys are recorded by name only. */
function configAudit(
  action: string,
  type: string,
  tenantUuid: string,
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
): AuditEntry {
  const changes = changesOf(before, after).map((c) => secretChange(c.field));
  return { action, target: { kind: `external_auth:${type}`, uuid: tenantUuid, tenantUuid }, changes };
}

export async function deleteTenantConfig(app: AppContext, caller: Caller, type: string): Promise<void> {
  const tenantUuid = caller.tenantUuid;
  if (!tenantUuid) throw new NotFound("tenants");
  const tUuid = await typeUuid(app.db, type);
  // Absent already: the desired state (D4 of docs/wazo-auth-differences.md).
  await inTransaction(app, async (tx) => {
    const gone = await tx
      .delete(externalAuthConfigs)
      .where(and(eq(externalAuthConfigs.tenantUuid, tenantUuid), eq(externalAuthConfigs.typeUuid, tUuid)))
      .returning();
    if (gone[0])
      await recordAudit(
        app,
        tx,
        caller,
        configAudit("external_auth.delete", type, tenantUuid, parse(gone[0].data), null),
      );
  });
}

export async function readTenantConfig(
  app: AppContext,
  caller: Caller,
  type: string,
): Promise<Record<string, unknown>> {
  await typeUuid(app.db, type);
  const config = caller.tenantUuid ? await getTenantConfig(app.db, type, caller.tenantUuid) : null;
  if (!config) throw new NotFound(type, caller.tenantUuid ?? undefined, `No "${type}" configuration for this tenant`);
  return config;
}

/** GET /external/{type}/users: users of the caller's tenants having a record of that type. */
export async function listExternalUsers(
  app: AppContext,
  caller: Caller,
  type: string,
  params: ListParams,
): Promise<Collection<{ uuid: string }>> {
  const tUuid = await typeUuid(app.db, type);
  const where = and(
    eq(userExternalAuths.externalAuthTypeUuid, tUuid),
    inCallerScope(app, caller, params.recurse, users.tenantUuid),
  );
  let query = app.db
    .select({ uuid: users.uuid })
    .from(userExternalAuths)
    .innerJoin(users, eq(users.uuid, userExternalAuths.userUuid))
    .where(where)
    .orderBy(asc(users.uuid))
    .offset(params.offset)
    .$dynamic();
  if (params.limit !== undefined) query = query.limit(params.limit);
  const [rows, [count]] = await Promise.all([
    query,
    app.db
      .select({ n: sql<number>`count(*)::int` })
      .from(userExternalAuths)
      .innerJoin(users, eq(users.uuid, userExternalAuths.userUuid))
      .where(where),
  ]);
  return collection(rows, count?.n ?? 0, count?.n ?? 0);
}
