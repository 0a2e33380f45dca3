// The layers point one way (docs/architecture.md): services/ and db/ hold the business logic and
// the storage, and never reach up into the HTTP layer; domain/ is below everything. The four doors
// (api/: the wazo REST API, oauth/: the protocol endpoints, web/: the hosted pages, scim/: SCIM 2.0)
// sit on top, each on its own: a door never imports another, and a route module never imports
// another route module (what two of them share lives in a module of helpers).
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../../src");

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

/** The strongly connected groups of two or more files of the import graph of src/ (Tarjan). */
function importCircles(): string[][] {
  const graph = new Map(sourceFiles(SRC).map((f) => [relative(SRC, f), importsOf(f).filter((t) => /\.tsx?$/.test(t))]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) circles.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return circles;
}

const DOORS = ["api", "oauth", "web", "scim"];

/** A route module: it declares the routes a door mounts (`export function …Routes(`). */
const isRouteModule = (file: string) => /export function \w+Routes\(/.test(readFileSync(join(SRC, file), "utf8"));

function violations(layer: string, forbidden: string[]): string[] {
  return sourceFiles(join(SRC, layer)).flatMap((f) =>
    importsOf(f)
      .filter((target) => forbidden.some((top) => target === top || target.startsWith(`${top}/`)))
      .map((target) => `${relative(SRC, f)} → ${target}`),
  );
}

describe("layering", () => {
  test("services/ and db/ never import http/ or a door", () => {
    const above = ["http", ...DOORS];
    expect([...violations("services", above), ...violations("db", above)]).toEqual([]);
  });

  test("the shared layers (domain, http, boot, config, observe, bus) never import a door", () => {
    expect(["domain", "http", "boot", "config", "observe", "bus"].flatMap((layer) => violations(layer, DOORS))).toEqual(
      [],
    );
  });

  test("the doors never import one another", () => {
    expect(
      DOORS.flatMap((door) =>
        violations(
          door,
          DOORS.filter((d) => d !== door),
        ),
      ),
    ).toEqual([]);
  });

  test("no module of a door imports a route module (shared helpers live apart)", () => {
    const found = DOORS.flatMap((door) =>
      sourceFiles(join(SRC, door)).flatMap((f) =>
        importsOf(f)
          .filter((t) => /\.tsx?$/.test(t) && DOORS.some((d) => t.startsWith(`${d}/`)) && isRouteModule(t))
          .map((t) => `${relative(SRC, f)} → ${t}`),
      ),
    );
    expect(found).toEqual([]);
  });

  test("domain/ imports nothing above it but types", () => {
    const above = ["http", ...DOORS, "services", "db", "app.ts", "main.ts", "cli", "boot"];
    const found = sourceFiles(join(SRC, "domain")).flatMap((f) => {
      const text = readFileSync(f, "utf8");
      const valueImports = [...text.matchAll(/^import\s+(?!type\b)[^;]*?from\s+"(\.[^"]+)"/gms)].map((m) =>
        relative(SRC, resolve(dirname(f), m[1]!)),
      );
      return valueImports
        .filter((t) => above.some((top) => t === top || t.startsWith(`${top}/`)))
        .map((t) => `${relative(SRC, f)} → ${t}`);
    });
    expect(found).toEqual([]);
  });

  test("no import circles, type-only imports included", () => {
    expect(importCircles()).toEqual([]);
  });

  test("stock plugins import nothing of Tessera but the plugin SDK (src/plugins/sdk.ts)", () => {
    const PLUGINS = resolve(SRC, "../plugins");
    const found = sourceFiles(PLUGINS).flatMap((f) => {
      const text = readFileSync(f, "utf8");
      return [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)"(\.[^"]+)"/g)]
        .map((m) => resolve(dirname(f), m[1]!))
        .filter((target) => !target.startsWith(`${PLUGINS}/`) && target !== join(SRC, "plugins", "sdk.ts"))
        .map((target) => `${relative(PLUGINS, f)} → ${relative(resolve(SRC, ".."), target)}`);
    });
    expect(found).toEqual([]);
  });

  test("the check sees a forbidden import (it can fail)", () => {
    const f = join(SRC, "api", "users.ts");
    expect(importsOf(f).some((t) => t.startsWith("services/"))).toBe(true);
    expect(isRouteModule("api/users.ts")).toBe(true);
    expect(isRouteModule("api/lists.ts")).toBe(false);
  });
});
