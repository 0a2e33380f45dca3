// The configuration's documentation cannot drift from its schema: every key the schema knows is in
// config.example.yml (set to its default, or named in a comment there), carries a description, and
// docs/configuration.md's key reference is exactly what scripts/config-reference.ts generates from the
// schema. (That every key of config.example.yml is known is checked by tests/ops/first-contact.test.ts.)
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { configDocPath, keyRows, withReference } from "../../scripts/config-reference.ts";

const root = join(import.meta.dir, "../..");

/** Every leaf key of the schema, dotted (a record, such as `plugins.idp`, is a leaf). */
const schemaKeys = () => keyRows().flatMap((r) => (r.type === "section" ? [] : [r.key]));

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

test("every key of the schema says what it means (.describe in src/config/config.ts)", () => {
  expect(
    keyRows()
      .filter((r) => !r.description?.trim())
      .map((r) => r.key),
  ).toEqual([]);
});

test("docs/configuration.md's key reference is the one generated from the schema (run `npm run docs:config`)", () => {
  const page = readFileSync(configDocPath, "utf8");
  expect(withReference(page)).toBe(page);
  for (const key of schemaKeys()) expect(page).toContain(`| \`${key}\` |`);
});
