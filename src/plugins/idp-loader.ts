// Loads the identity providers (built-in `refresh_token` and `native`, then the configured
// `plugins.idp` entries) and the metadata plugins, at start.
import { fileURLToPath } from "node:url";
import type { AppContext } from "../boot/context.ts";
import { importPlugin, instantiate, loadKind } from "./loader.ts";
import { pluginServices } from "./services.ts";
import type { IdpPlugin, MetadataPlugin, PluginDependencies } from "./types.ts";

const stock = (path: string) => fileURLToPath(new URL(`../../plugins/${path}`, import.meta.url));

/** Stock metadata plugins by name (wazo-auth's metadata plugins). */
export const STOCK_METADATA: Record<string, string> = {
  default_user: stock("metadata/default-user.ts"),
  default_internal: stock("metadata/default-internal.ts"),
  default_external_api: stock("metadata/default-external-api.ts"),
  user_admin_status: stock("metadata/user-admin-status.ts"),
};

function dependencies(app: AppContext, config: Record<string, unknown> = {}): PluginDependencies {
  return { services: pluginServices(app), backends: app.plugins.backends, config };
}

async function loadBuiltin(app: AppContext, path: string): Promise<IdpPlugin> {
  const idp = (await instantiate(await importPlugin(path), {})) as IdpPlugin;
  await idp.load(dependencies(app));
  return idp;
}

export async function loadIdentityProviders(app: AppContext): Promise<void> {
  const registry = app.plugins;
  registry.builtinIdp.refreshToken = await loadBuiltin(app, stock("idp/refresh-token.ts"));
  registry.builtinIdp.native = await loadBuiltin(app, stock("idp/native.ts"));
  for (const { name, instance, entry } of await loadKind(app, registry, "idp")) {
    const idp = instance as IdpPlugin;
    const report = registry.report.find((r) => r.kind === "idp" && r.name === name);
    try {
      await idp.load(dependencies(app, entry.config));
      idp.loaded = true;
      registry.idp.set(name, { plugin: idp, priority: entry.priority });
    } catch (e) {
      if (report) Object.assign(report, { status: "fail", error: `load failed: ${(e as Error).message}` });
      app.log.error("identity provider failed to load", { plugin: name, error: (e as Error).message });
    }
  }
  await loadMetadataPlugins(app);
}

/** Stock metadata plugins enabled by `enabled_metadata_plugins` or named in
 * `purpose_metadata_mapping`, plus any third-party ones under `plugins.metadata`. */
async function loadMetadataPlugins(app: AppContext): Promise<void> {
  const registry = app.plugins;
  const enabled = Object.entries(app.config.enabled_metadata_plugins)
    .filter(([, on]) => on)
    .map(([name]) => name);
  const mapped = Object.values(app.config.purpose_metadata_mapping).flat();
  for (const name of new Set([...enabled, ...mapped])) {
    const path = STOCK_METADATA[name];
    if (!path) continue;
    const plugin = (await instantiate(await importPlugin(path), {})) as MetadataPlugin;
    await plugin.load?.(dependencies(app));
    registry.metadata.set(name, plugin);
  }
  for (const { name, instance, entry } of await loadKind(app, registry, "metadata")) {
    const plugin = instance as MetadataPlugin;
    await plugin.load?.(dependencies(app, entry.config));
    registry.metadata.set(name, plugin);
  }
}
