// Reads the config's plugin lists, imports each module, checks it against its interface and
// reports every plugin (ok or fail, with the reason) for the log and /status. A plugin that fails
// does not stop the service unless it is marked `required`.
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Config } from "../config/config.ts";
import { defaultPlugins } from "../config/config.ts";
import type { AppContext } from "../boot/context.ts";
import type { BackendPlugin, LoadedPluginReport, PluginKind, PluginRegistry } from "./types.ts";
import { embeddedModule } from "../boot/embedded.ts";
import { pluginServices } from "./services.ts";

interface PluginEntry {
  module: string;
  enabled: boolean;
  required: boolean;
  priority: number;
  config: Record<string, unknown>;
}

/** Members each kind must have (checked at load; the message names the missing one). */
export const REQUIRED_MEMBERS: Record<PluginKind, string[]> = {
  backends: ["verifyPassword"],
  idp: ["authenticationMethod", "load", "canAuthenticate", "verifyAuth", "getBackend"],
  external_auth: ["routes"],
  email_notification: ["sendConfirmation", "sendPasswordReset"],
  metadata: ["getTokenMetadata"],
};

export class PluginLoadError extends Error {}

export function pluginEntries(config: Config, kind: PluginKind): Array<[string, PluginEntry]> {
  const configured = config.plugins[kind] as Record<string, string | Partial<PluginEntry>>;
  const source = Object.keys(configured).length > 0 ? configured : (defaultPlugins[kind] ?? {});
  return Object.entries(source).map(([name, value]) => {
    const entry = typeof value === "string" ? { module: value } : value;
    return [
      name,
      {
        module: entry.module!,
        enabled: entry.enabled ?? true,
        required: entry.required ?? false,
        priority: entry.priority ?? 100,
        config: entry.config ?? {},
      },
    ];
  });
}

/** Module specifier: relative paths are relative to the working directory; others are packages. */
/** A plugin module: carried by a single-file build when it is a stock one, else imported. */
export async function importPlugin(spec: string): Promise<Record<string, unknown>> {
  return ((embeddedModule(spec) as Record<string, unknown> | undefined) ??
    (await import(resolveModule(spec)))) as Record<string, unknown>;
}

export function resolveModule(spec: string): string {
  if (spec.startsWith(".") || isAbsolute(spec)) return pathToFileURL(resolve(spec)).href;
  return spec;
}

/** Instantiates a module's default export: an object, a class, or a factory. */
export async function instantiate(mod: Record<string, unknown>, config: Record<string, unknown>): Promise<unknown> {
  const exported = mod.default ?? mod.plugin ?? mod;
  if (typeof exported === "function") {
    const fn = exported as { prototype?: unknown } & ((...a: unknown[]) => unknown);
    const isClass = /^class\s/.test(Function.prototype.toString.call(fn));
    return isClass ? new (fn as unknown as new (c: unknown) => unknown)(config) : await fn(config);
  }
  return exported;
}

export function missingMembers(kind: PluginKind, instance: unknown): string[] {
  if (typeof instance !== "object" || instance === null) return REQUIRED_MEMBERS[kind];
  return REQUIRED_MEMBERS[kind].filter((m) => !(m in instance));
}

/** Loads one kind; returns the instances that loaded, and records every outcome in `registry.report`. */
export async function loadKind(
  app: AppContext,
  registry: PluginRegistry,
  kind: PluginKind,
  /** Passed to the plugin's constructor or factory instead of its own `config` entry. */
  constructorArg?: Record<string, unknown>,
  /** Configuration merged under the entry's own `config` (e.g. the plugin's section of the service config). */
  baseConfig?: (name: string) => Record<string, unknown>,
): Promise<Array<{ name: string; instance: unknown; entry: PluginEntry }>> {
  const loaded: Array<{ name: string; instance: unknown; entry: PluginEntry }> = [];
  for (const [name, entry] of pluginEntries(app.config, kind)) {
    if (!entry.enabled) continue;
    const report: LoadedPluginReport = { kind, name, module: entry.module, status: "ok" };
    try {
      const mod = await importPlugin(entry.module);
      const config = { ...(baseConfig?.(name) ?? {}), ...entry.config };
      const instance = await instantiate(mod, constructorArg ? { ...constructorArg, ...config } : config);
      const missing = missingMembers(kind, instance);
      if (missing.length > 0) throw new Error(`does not implement ${missing.join(", ")}`);
      loaded.push({ name, instance, entry });
    } catch (e) {
      report.status = "fail";
      report.error = (e as Error).message;
      app.log.error("plugin failed to load", { kind, plugin: name, module: entry.module, error: report.error });
      if (entry.required)
        throw new PluginLoadError(
          `required ${kind} plugin "${name}" (${entry.module}) failed to load: ${report.error}`,
        );
    }
    registry.report.push(report);
  }
  return loaded;
}

/** The minimal loader of the foundation: backends. Other kinds are added by their own modules. */
export async function loadBackends(app: AppContext, registry: PluginRegistry): Promise<void> {
  for (const { name, instance } of await loadKind(app, registry, "backends")) {
    const backend = instance as BackendPlugin;
    try {
      await backend.load?.({ services: pluginServices(app), backends: registry.backends, config: {} });
      registry.backends.set(name, backend);
    } catch (e) {
      const report = registry.report.find((r) => r.kind === "backends" && r.name === name);
      if (report) Object.assign(report, { status: "fail", error: (e as Error).message });
      app.log.error("backend failed to start", { plugin: name, error: (e as Error).message });
    }
  }
}
