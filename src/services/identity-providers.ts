// Identity providers seen from the rest of the service: which authentication methods exist, which
// backend serves a method, and a user's effective method (COMPATIBILITY.md §5.3, §9.6, §10.1).
import { eq } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import type { DbOrTx } from "../db/index.ts";
import { tenants } from "../db/schema.ts";
import { AuthenticationFailed } from "../http/errors.ts";
import type { BackendPlugin, LoginArgs } from "../plugins/types.ts";

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

/** A user's own method, or its tenant's default when it says `default`. */
export async function effectiveMethod(db: DbOrTx, own: string, tenantUuid: string): Promise<string> {
  if (own !== "default") return own;
  const [t] = await db.select({ m: tenants.defaultAuthenticationMethod }).from(tenants).where(eq(tenants.uuid, tenantUuid));
  return t?.m ?? "native";
}
