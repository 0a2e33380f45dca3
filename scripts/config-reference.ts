// Generates the key reference of docs/configuration.md from the configuration schema (src/config/config.ts):
// one row per key with its type, default and the schema's own description, so the page cannot drift
// from what the service accepts. `npm run docs:config` rewrites the block between the markers;
// tests/ops/config-docs.test.ts fails when the committed block differs from what this prints.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { configSchema } from "../src/config/config.ts";

export const BEGIN = "<!-- BEGIN key reference: generated from src/config/config.ts by `npm run docs:config` -->";
export const END = "<!-- END key reference -->";

const root = fileURLToPath(new URL("..", import.meta.url));
export const configDocPath = join(root, "docs", "configuration.md");

interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
}

export interface KeyRow {
  key: string;
  type: string;
  default: string;
  description: string | undefined;
}

/** The object variant of a schema that may also be null (`amqp`) or a union. */
function objectOf(s: JsonSchema): JsonSchema | undefined {
  return s.properties ? s : s.anyOf?.find((o) => o.properties);
}

function typeOf(s: JsonSchema): string {
  if (s.enum) return s.enum.map((v) => `\`${v}\``).join(" \\| ");
  if (s.anyOf) return [...new Set(s.anyOf.map(typeOf))].join(" or ");
  const types = (Array.isArray(s.type) ? s.type : [s.type]).filter((t): t is string => !!t);
  return (
    types
      .map((t) => {
        if (t === "array") return `list of ${s.items ? typeOf(s.items) : "values"}`;
        if (t === "object") return "mapping";
        if (t === "integer" || t === "number") {
          // zod states the safe-integer bounds of an unbounded integer: only real bounds are shown.
          const bound = (b: number | undefined) =>
            b !== undefined && Math.abs(b) < Number.MAX_SAFE_INTEGER ? b : undefined;
          const [min, max] = [bound(s.minimum), bound(s.maximum)];
          if (min !== undefined && max !== undefined) return `${t} ${min}–${max}`;
          if (min !== undefined) return `${t} ≥ ${min}`;
          return max !== undefined ? `${t} ≤ ${max}` : t;
        }
        return t;
      })
      .join(" or ") || "any"
  );
}

function defaultOf(value: unknown): string {
  if (value === undefined) return "—";
  if (value === null) return "none";
  // Template paths are absolute on the machine that parsed the schema: show them from the project.
  const text = JSON.stringify(value).replaceAll(root, "");
  return `\`${text.replaceAll("|", "\\|")}\``;
}

/** Every key of the schema, depth first, with sections (objects) expanded into their keys. */
export function keyRows(): KeyRow[] {
  const rows: KeyRow[] = [];
  const walk = (s: JsonSchema, path: string, inheritedDefault: unknown) => {
    const object = objectOf(s);
    if (object?.properties && path !== "") {
      // A nullable section (amqp) is one row of its own, then its keys.
      if (s.description)
        rows.push({ key: path, type: "section", default: defaultOf(s.default), description: s.description });
    }
    if (object?.properties) {
      for (const [k, v] of Object.entries(object.properties))
        walk(v, path ? `${path}.${k}` : k, (inheritedDefault as Record<string, unknown> | null)?.[k]);
      return;
    }
    rows.push({
      key: path,
      type: typeOf(s),
      default: defaultOf("default" in s ? s.default : inheritedDefault),
      description: s.description,
    });
  };
  walk(z.toJSONSchema(configSchema, { io: "input", unrepresentable: "any" }) as JsonSchema, "", undefined);
  return rows;
}

export function referenceTable(): string {
  const lines = ["| Key | Type | Default | Meaning |", "|---|---|---|---|"];
  for (const r of keyRows())
    lines.push(`| \`${r.key}\` | ${r.type} | ${r.default} | ${(r.description ?? "").replaceAll("|", "\\|")} |`);
  return lines.join("\n");
}

/** The page with its generated block replaced by the current reference. */
export function withReference(page: string): string {
  const begin = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${configDocPath} lacks the markers ${BEGIN} … ${END}`);
  return `${page.slice(0, begin + BEGIN.length)}\n${referenceTable()}\n${page.slice(end)}`;
}

if (import.meta.main) {
  const page = readFileSync(configDocPath, "utf8");
  const next = withReference(page);
  if (next !== page) writeFileSync(configDocPath, next);
  console.log(next === page ? "docs/configuration.md: up to date" : "docs/configuration.md: key reference rewritten");
}
