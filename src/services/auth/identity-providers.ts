// Identity providers seen from the rest of the service: which authentication methods exist, which
// backend serves a method, and a user's effective method (wazo-auth's login flow, default authentication method, user fields).
import { and, eq, inArray } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { tenants, users } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { changesOf, recordAudit } from "../audit/record.ts";
import { AuthenticationFailed, NotFound, orAbsent } from "../../domain/errors.ts";
import { requireVisibleUser } from "../identity/visibility.ts";
import type { BackendPlugin, LoginArgs } from "../../plugins/types.ts";

/** Valid values of `authentication_method`: native, default and every loaded IdP's method. */
export function authenticationMethods(app: AppContext): string[] {
  const methods = ["native", "default"];
  for (const { plugin } of app.plugins.idp.values()) {
    if (plugin.loaded && !methods.includes(plugin.authenticationMethod)) methods.push(plugin.authenticationMethod);
  }
  return methods;
}

/** The backend of a method: native → wazo_user, else the IdP plugin's `getBackend`. */
export function backendForMethod(app: AppContext, method: string, args: LoginArgs): BackendPlugin {
  if (method !== "native") {
    for (const { plugin } of app.plugins.idp.values()) {
      if (plugin.loaded && plugin.authenticationMethod === method) return plugin.getBackend(args);
    }
  }
  const wazoUser = app.plugins.backends.get("wazo_user");
  if (!wazoUser) throw new AuthenticationFailed();
  return wazoUser;
}

/** A user's own method, or its tenant's default when it says `default` (native without a tenant method). */
export function resolveMethod(own: string, tenantDefault: string | null | undefined): string {
  return own !== "default" ? own : (tenantDefault ?? "native");
}

/** `resolveMethod`, reading the tenant's default when it is needed. */
export async function effectiveMethod(db: DbOrTx, own: string, tenantUuid: string): Promise<string> {
  if (own !== "default") return own;
  const [t] = await db
    .select({ m: tenants.defaultAuthenticationMethod })
    .from(tenants)
    .where(eq(tenants.uuid, tenantUuid));
  return resolveMethod(own, t?.m);
}

function requireMethod(app: AppContext, type: string): void {
  if (!authenticationMethods(app).includes(type))
    throw new NotFound("idp", type, `No such identity provider: "${type}"`);
}

/** PUT /idp/{type}/users[/{u}]: all the users must be visible, else nothing changes. */
export async function assignIdp(app: AppContext, caller: Caller, type: string, userUuids: string[]): Promise<void> {
  requireMethod(app, type);
  await inTransaction(app, async (tx) => {
    const before = [];
    for (const uuid of userUuids) before.push(await requireVisibleUser(app, caller, uuid, tx));
    if (userUuids.length)
      await tx.update(users).set({ authenticationMethod: type }).where(inArray(users.uuid, userUuids));
    await recordAudit(app, tx, caller, ...before.map((u) => idpAudit(u, type)));
  });
}

/** DELETE /idp/{type}/users/{u}: back to `default` when the user used that method; absent or unseen user → nothing (D4 of docs/wazo-auth-differences.md). */
export async function unassignIdp(app: AppContext, caller: Caller, type: string, userUuid: string): Promise<void> {
  requireMethod(app, type);
  const user = await orAbsent(requireVisibleUser(app, caller, userUuid));
  if (user?.authenticationMethod === type) {
    await inTransaction(app, async (tx) => {
      await tx
        .update(users)
        .set({ authenticationMethod: "default" })
        .where(and(eq(users.uuid, userUuid), eq(users.authenticationMethod, type)));
      await recordAudit(app, tx, caller, idpAudit(user, "default"));
    });
  }
}

/** `user.idp.update`: the user's authentication method, old and new. */
const idpAudit = (u: { uuid: string; tenantUuid: string; authenticationMethod: string }, method: string) => ({
  action: "user.idp.update",
  target: { kind: "user", uuid: u.uuid, tenantUuid: u.tenantUuid },
  changes: changesOf({ authentication_method: u.authenticationMethod }, { authentication_method: method }),
});
