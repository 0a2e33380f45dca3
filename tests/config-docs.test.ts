// The configuration's documentation cannot drift from its schema: every key the schema knows is in
// config.example.yml (set to its default, or named in a comment there), and every top-level key is
// named in docs/configuration.md. (That every key of config.example.yml is known is checked by
// tests/first-contact.test.ts.)
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { z } from "zod";
import { configSchema } from "../src/config.ts";

const root = join(import.meta.dir, "..");

interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  anyOf?: JsonSchema[];
}

/** Every leaf key of the schema, dotted (a record, such as `plugins.idp`, is a leaf). */
export function schemaKeys(): string[] {
  const keys: string[] = [];
  const walk = (s: JsonSchema | undefined, path: string) => {
    const object = s?.properties ? s : s?.anyOf?.find((o) => o.properties);
    if (object?.properties) {
      for (const [k, v] of Object.entries(object.properties)) walk(v, path ? `${path}.${k}` : k);
    } else keys.push(path);
  };
  walk(z.toJSONSchema(configSchema, { io: "input", unrepresentable: "any" }) as JsonSchema, "");
  return keys;
}

test("every key of the schema is in config.example.yml, set or named in a comment", () => {
  const text = readFileSync(join(root, "config.example.yml"), "utf8");
  const live = parse(text) as Record<string, unknown>;
  const isSet = (path: string[]) => {
    let o: unknown = live;
    for (const p of path) {
      if (!o || typeof o !== "object" || !(p in o)) return false;
      o = (o as Record<string, unknown>)[p];
    }
    return true;
  };
  const keys = schemaKeys();
  expect(keys.length).toBeGreaterThan(90);
  const missing = keys.filter((k) => !isSet(k.split(".")) && !new RegExp(`\\b${k.split(".").pop()}\\b`).test(text));
  expect(missing).toEqual([]);
});

test("every top-level key is named in docs/configuration.md", () => {
  const doc = readFileSync(join(root, "docs", "configuration.md"), "utf8");
  const tops = [...new Set(schemaKeys().map((k) => k.split(".")[0]!))];
  expect(tops.filter((k) => !doc.includes(`\`${k}`) && !doc.includes(`${k}.`))).toEqual([]);
});
