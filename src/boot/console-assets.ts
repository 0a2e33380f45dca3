// The console's files (console/: a small Preact application). Bun's own bundler builds them once,
// in memory, when the service starts with the console on: no separate build step, no dev-only
// toolchain, so `npm ci --omit=dev && npm start` serves them. A single-file build carries them
// prebuilt (scripts/build.ts), since the executable has no sources to bundle.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { embeddedFile } from "./embedded.ts";

export const CONSOLE_FILES = {
  "index.html": "text/html; charset=utf-8",
  "app.js": "application/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
} as const;
export type ConsoleFile = keyof typeof CONSOLE_FILES;
export type ConsoleAssets = Record<ConsoleFile, string>;

const SOURCES = join(import.meta.dir, "..", "..", "console");

/** Bundles console/src/main.tsx (minified) and reads the page and its style sheet. */
export async function buildConsole(): Promise<ConsoleAssets> {
  const result = await Bun.build({
    entrypoints: [join(SOURCES, "src", "main.tsx")],
    target: "browser",
    format: "esm",
    minify: true,
    define: { "process.env.NODE_ENV": '"production"' },
    jsx: { runtime: "automatic", importSource: "preact" },
  });
  if (!result.success || !result.outputs[0])
    throw new Error(`the console does not build:\n${result.logs.map(String).join("\n")}`);
  return {
    "index.html": readFileSync(join(SOURCES, "index.html"), "utf8"),
    "app.js": await result.outputs[0].text(),
    "app.css": readFileSync(join(SOURCES, "src", "app.css"), "utf8"),
  };
}

function embeddedConsole(): ConsoleAssets | null {
  const files = Object.keys(CONSOLE_FILES).map((name) => [name, embeddedFile(`console/${name}`)] as const);
  return files.every(([, text]) => text !== undefined) ? (Object.fromEntries(files) as ConsoleAssets) : null;
}

/** One file as served: its text, gzipped once (RFC 9110 §8.4.1.3), and a strong validator. */
export interface ServedFile {
  text: string;
  gzip: Uint8Array<ArrayBuffer>;
  /** RFC 9110 §8.8.3: a strong entity tag, the content's SHA-256 (so a 304 is exact). */
  etag: string;
}

function prepare(assets: ConsoleAssets): Record<ConsoleFile, ServedFile> {
  const out = {} as Record<ConsoleFile, ServedFile>;
  for (const name of Object.keys(CONSOLE_FILES) as ConsoleFile[]) {
    const text = assets[name];
    const etag = `"${createHash("sha256").update(text).digest("base64url").slice(0, 22)}"`;
    out[name] = { text, gzip: new Uint8Array(gzipSync(text, { level: 9 })), etag };
  }
  return out;
}

let assets: Promise<Record<ConsoleFile, ServedFile>> | null = null;

/** The console's files: the executable's, else built once per process; gzipped and tagged once. */
export function consoleAssets(): Promise<Record<ConsoleFile, ServedFile>> {
  assets ??= (async () => prepare(embeddedConsole() ?? (await buildConsole())))();
  assets.catch(() => {
    assets = null;
  });
  return assets;
}
