// The layers point one way (README, Architecture): services/ and db/ hold the business logic and
// the storage, and never reach up into the HTTP layer; domain/ is below everything.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return /\.tsx?$/.test(e.name) ? [p] : [];
  });
}

/** Every module a file imports or re-exports (static, dynamic, type-only), as paths under src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)"(\.[^"]+)"/g)].map((m) => m[1]!);
  return specs.map((s) => relative(SRC, resolve(dirname(file), s)));
}

function violations(layer: string, forbidden: string[]): string[] {
  return sourceFiles(join(SRC, layer)).flatMap((f) =>
    importsOf(f)
      .filter((target) => forbidden.some((top) => target === top || target.startsWith(`${top}/`)))
      .map((target) => `${relative(SRC, f)} → ${target}`),
  );
}

describe("layering", () => {
  test("services/ and db/ never import http/ or routes/", () => {
    expect([...violations("services", ["http", "routes"]), ...violations("db", ["http", "routes"])]).toEqual([]);
  });

  test("domain/ imports nothing above it but types", () => {
    const above = ["http", "routes", "services", "db", "app.ts", "main.ts", "cli", "startup.ts"];
    const found = sourceFiles(join(SRC, "domain")).flatMap((f) => {
      const text = readFileSync(f, "utf8");
      const valueImports = [...text.matchAll(/^import\s+(?!type\b)[^;]*?from\s+"(\.[^"]+)"/gms)].map((m) => relative(SRC, resolve(dirname(f), m[1]!)));
      return valueImports.filter((t) => above.some((top) => t === top || t.startsWith(`${top}/`))).map((t) => `${relative(SRC, f)} → ${t}`);
    });
    expect(found).toEqual([]);
  });

  test("the check sees a forbidden import (it can fail)", () => {
    const f = join(SRC, "routes", "users.ts");
    expect(importsOf(f).some((t) => t.startsWith("services/"))).toBe(true);
  });
});
