// Loads the external-auth plugins (default: the stock google, microsoft and mobile), gives each
// the services bound to its auth type, and registers the types in the database.
import type { AppContext } from "../boot/context.ts";
import {
  deleteUserData,
  getTenantConfig,
  getUserData,
  registerTypes,
  writeUserData,
} from "../services/integrations/external-auth.ts";
import { buildOAuth2RedirectUrl, registerOAuth2Callback } from "../services/integrations/oauth2.ts";
import type { ExternalAuthPlugin, ExternalAuthServices } from "./external-auth-types.ts";
import { loadKind } from "./loader.ts";

export function externalAuthServices(app: AppContext, authType: string): ExternalAuthServices {
  return {
    authType,
    log: app.log,
    getData: (userUuid) => getUserData(app.db, authType, userUuid),
    createData: (userUuid, data) => writeUserData(app, authType, userUuid, data, "create"),
    updateData: (userUuid, data, upsert) => writeUserData(app, authType, userUuid, data, upsert ? "upsert" : "update"),
    deleteData: (userUuid) => deleteUserData(app, authType, userUuid),
    getConfig: (tenantUuid) => getTenantConfig(app.db, authType, tenantUuid),
    registerOAuth2Callback: (userUuid, state, callback, ...extra) =>
      registerOAuth2Callback(app, authType, userUuid, state, callback, extra),
    buildOAuth2RedirectUrl: () => buildOAuth2RedirectUrl(app, authType),
  };
}

export async function loadExternalAuthPlugins(app: AppContext): Promise<void> {
  // Stock plugins read their section of the service config (`google:`, `microsoft:`, ...) as wazo-auth does.
  const sections = app.config as unknown as Record<string, Record<string, unknown> | undefined>;
  for (const { name, instance } of await loadKind(
    app,
    app.plugins,
    "external_auth",
    undefined,
    (name) => sections[name] ?? {},
  )) {
    const plugin = instance as ExternalAuthPlugin;
    const report = app.plugins.report.find((r) => r.kind === "external_auth" && r.name === name);
    try {
      await plugin.load?.(externalAuthServices(app, name));
      app.plugins.externalAuth.set(name, plugin);
    } catch (e) {
      if (report) Object.assign(report, { status: "fail", error: `load failed: ${(e as Error).message}` });
      app.log.error("external auth plugin failed to load", { plugin: name, error: (e as Error).message });
    }
  }
  await registerTypes(app, [...app.plugins.externalAuth.keys()]);
}
