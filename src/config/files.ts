// The configuration's files: the main one and, as wazo-auth reads them, the `*.yml` files of the
// directory its `extra_config_files` names (wazo-auth tells operators to put every local change
// there, `/etc/wazo-auth/conf.d/`). Merged as wazo-auth's configuration helper merges them (xivo's
// config_helper, read_config_file_hierarchy_accumulating_list): the directory's files in name order
// and the FIRST one wins, every one of them over the main file; mappings merge key by key, lists
// accumulate (the winning file's entries first). Each value remembers the files it came from, for
// `tessera config check`.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { ConfigError } from "./path.ts";

export type RawConfig = Record<string, unknown>;

/** Where each value came from: a dotted key path (lists and leaves) → the files (or "environment"). */
export type ConfigOrigins = Map<string, string[]>;

export interface ConfigFiles {
  raw: RawConfig;
  /** The files read, highest priority first. */
  files: string[];
  origins: ConfigOrigins;
  /** Non-fatal problems, as wazo-auth treats them (an unreadable directory). */
  warnings: string[];
}

const isMapping = (v: unknown): v is RawConfig => typeof v === "object" && v !== null && !Array.isArray(v);

export function readConfigFile(path: string): RawConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError(`cannot read config file ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (e) {
    throw new ConfigError(`config file ${path} is not valid YAML: ${(e as Error).message}`);
  }
  if (!isMapping(raw)) throw new ConfigError(`config file ${path} must be a mapping`);
  return raw;
}

/**
 * The main file merged with its `extra_config_files` directory. A relative directory is taken from
 * the main file's directory. Unlike wazo-auth, which prints the error and skips the file, a file of
 * the directory that cannot be read or parsed is refused: a local change silently lost is worse.
 */
export function readConfigFiles(mainPath: string): ConfigFiles {
  const main = readConfigFile(mainPath);
  const warnings: string[] = [];
  const layers: Array<{ path: string; data: RawConfig }> = [];
  const setting = main.extra_config_files;
  if (setting != null) {
    if (typeof setting !== "string" || setting === "")
      throw new ConfigError("invalid configuration:\n  extra_config_files: a directory path is expected");
    const dir = resolve(dirname(mainPath), setting);
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch (e) {
      // wazo-auth carries on without the directory (its shipped file names /etc/wazo-auth/conf.d/).
      warnings.push(
        `extra_config_files: cannot read the directory ${dir} (${(e as NodeJS.ErrnoException).code}); no extra file read`,
      );
    }
    for (const name of names.filter((n) => !n.startsWith(".") && n.endsWith(".yml")).sort())
      layers.push({ path: join(dir, name), data: readConfigFile(join(dir, name)) });
  }
  layers.push({ path: mainPath, data: main });
  const raw: RawConfig = {};
  const origins: ConfigOrigins = new Map();
  for (const layer of layers) fillIn(raw, layer.data, layer.path, origins, []);
  return { raw, files: layers.map((l) => l.path), origins, warnings };
}

/** Adds a lower-priority file's values: absent keys are taken, mappings merge, lists accumulate. */
function fillIn(target: RawConfig, source: RawConfig, file: string, origins: ConfigOrigins, path: string[]): void {
  for (const [key, value] of Object.entries(source)) {
    const at = [...path, key];
    const held = target[key];
    if (!Object.hasOwn(target, key)) {
      target[key] = structuredClone(value);
      noteOrigin(value, file, origins, at);
    } else if (isMapping(held) && isMapping(value)) fillIn(held, value, file, origins, at);
    else if (Array.isArray(held) && Array.isArray(value)) {
      held.push(...structuredClone(value));
      noteOrigin(value, file, origins, at);
    }
    // Otherwise the higher-priority file's value stays.
  }
}

/** Records `file` for every leaf (and list) below `path`. */
function noteOrigin(value: unknown, file: string, origins: ConfigOrigins, path: string[]): void {
  if (isMapping(value) && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) noteOrigin(v, file, origins, [...path, k]);
    return;
  }
  const key = path.join(".");
  origins.set(key, [...(origins.get(key) ?? []), file]);
}

/** Marks as "environment" the leaves the environment's overrides changed (config.ts, applyEnv). */
export function noteEnvironment(
  before: RawConfig,
  after: RawConfig,
  origins: ConfigOrigins,
  path: string[] = [],
): void {
  for (const [key, value] of Object.entries(after)) {
    const at = [...path, key];
    const was = before[key];
    if (isMapping(value) && (was === undefined || isMapping(was))) noteEnvironment(was ?? {}, value, origins, at);
    else if (was !== value) origins.set(at.join("."), ["environment"]);
  }
}
