// What a single-file build carries inside the executable: scripts/build.ts generates an entry that
// fills `globalThis.__TESSERA_EMBEDDED__` before anything else is imported. Running from a checkout,
// it is empty and everything is read from disk as usual.
export interface EmbeddedMigration {
  sql: string[];
  bps: boolean;
  folderMillis: number;
  hash: string;
}

export interface EmbeddedAssets {
  /** Drizzle migrations, already split as drizzle's migrator expects. */
  migrations?: EmbeddedMigration[];
  /** Text files by their path relative to the project root (`templates/…`, `swagger-ui-dist/…`). */
  files: Record<string, string>;
  /** Stock plugin modules by their path relative to the project root (`plugins/…`). */
  modules: Record<string, unknown>;
  /** PGlite's runtime files, which it would otherwise read beside its own module. */
  pglite?: { wasm: WebAssembly.Module; initdbWasm: WebAssembly.Module; fsBundle: Blob };
}

export const embedded: EmbeddedAssets | null = (globalThis as { __TESSERA_EMBEDDED__?: EmbeddedAssets }).__TESSERA_EMBEDDED__ ?? null;
