// What a single-file build carries inside the executable: scripts/build.ts generates an entry that
// fills `globalThis.__TESSERA_EMBEDDED__` before anything else is imported. Running from a checkout,
// it is empty and everything is read from disk as usual.
export interface EmbeddedAssets {
  /** Text files by their path relative to the project root (`drizzle/…`, `templates/…`, `swagger-ui-dist/…`). */
  files: Record<string, string>;
  /** Stock plugin modules by their path relative to the project root (`plugins/…`). */
  modules: Record<string, unknown>;
  /** PGlite's runtime files, which it would otherwise read beside its own module. */
  pglite?: { wasm: WebAssembly.Module; initdbWasm: WebAssembly.Module; fsBundle: Blob; pgTrgmBundle: Blob };
}

export const embedded: EmbeddedAssets | null =
  (globalThis as { __TESSERA_EMBEDDED__?: EmbeddedAssets }).__TESSERA_EMBEDDED__ ?? null;

const normalized = (path: string) => path.replaceAll("\\", "/");

/** The embedded entry whose key ends `path` (paths differ between the build machine and the executable). */
function lookup<T>(entries: Record<string, T> | undefined, path: string): T | undefined {
  if (!entries) return undefined;
  const p = normalized(path);
  for (const [key, value] of Object.entries(entries)) if (p === key || p.endsWith(`/${key}`)) return value;
  return undefined;
}

/** A stock plugin module carried by the executable, if `path` names one. */
export const embeddedModule = (path: string): unknown => lookup(embedded?.modules, path);

/** A text file carried by the executable (`templates/…`), if `path` names one. */
export const embeddedFile = (path: string): string | undefined => lookup(embedded?.files, path);
