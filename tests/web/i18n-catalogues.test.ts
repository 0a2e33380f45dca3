// The message catalogues (templates/locales/*.json, docs/languages.md): every language has every
// key of English, no other, with the same arguments of the same kinds; every message parses; every
// key is used by a template or the code, and every key a template or the code names exists.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { allCatalogues, availableLocales, REFERENCE_LOCALE } from "../../src/services/i18n/catalogue.ts";
import { messageArguments, parseMessage } from "../../src/services/i18n/message-format.ts";

const ROOT = join(import.meta.dir, "../..");
const SHIPPED = ["en", "fr", "de", "es", "it", "pt-BR", "nl"];

function filesUnder(dir: string, ext: RegExp): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile() && ext.test(entry.name)) out.push(join(entry.parentPath, entry.name));
  return out;
}

const english = allCatalogues().get(REFERENCE_LOCALE)!.messages;
const sources = [
  ...filesUnder(join(ROOT, "templates"), /\.(html|jinja|js)$/),
  ...filesUnder(join(ROOT, "src"), /\.ts$/),
].map((path) => ({ path, text: readFileSync(path, "utf8") }));

describe("catalogues", () => {
  test("the seven shipped languages are offered, English first", () => {
    expect(availableLocales()).toEqual(["en", ...SHIPPED.slice(1).sort()]);
  });

  for (const locale of SHIPPED.slice(1))
    test(`${locale}: every key of English and no other, the same arguments, nothing left in English`, () => {
      const messages = allCatalogues().get(locale)!.messages;
      expect(Object.keys(messages).sort()).toEqual(Object.keys(english).sort());
      for (const [key, source] of Object.entries(english)) {
        const own = messages[key]!;
        expect({ key, args: [...messageArguments(own)].sort() }).toEqual({
          key,
          args: [...messageArguments(source)].sort(),
        });
        // An untranslated message is a copy of English; a few words are the same in both languages.
        const sameInBoth = new Set(["common.password", "account.passkeys", "account.passkey_default_name"]);
        if (!sameInBoth.has(key) && /[a-z]{4}/.test(source.replace(/\{[^}]*\}/g, "")))
          expect({ key, same: own === source }).toEqual({ key, same: false });
      }
    });

  test("every message of every catalogue parses, and plurals and selects have their `other`", () => {
    for (const [locale, catalogue] of allCatalogues())
      for (const [key, message] of Object.entries(catalogue.messages))
        expect({ locale, key, parsed: (() => (parseMessage(message), true))() }).toEqual({ locale, key, parsed: true });
  });

  test("the upstream-provider button's key is in every language", () => {
    for (const [, catalogue] of allCatalogues())
      expect(messageArguments(catalogue.messages.sign_in_with!)).toEqual(new Map([["name", "text"]]));
  });

  test("every key is used by a template or the code (no dead key), and every key named exists", () => {
    // Keys whose use is built by code (`scope.${scope}`) or reserved for a merge (sign_in_with).
    const built = (key: string) => key.startsWith("scope.") || key === "sign_in_with";
    const unused = Object.keys(english).filter(
      (key) => !built(key) && !sources.some((s) => s.text.includes(`"${key}"`) || s.text.includes(`'${key}'`)),
    );
    expect(unused).toEqual([]);
    const named = new Set<string>();
    for (const { path, text } of sources) {
      if (!path.includes("templates")) continue;
      for (const m of text.matchAll(/\bt\(\s*["']([a-z_.]+)["']/g)) named.add(m[1]!);
    }
    expect([...named].filter((k) => !(k in english))).toEqual([]);
    expect(named.size).toBeGreaterThan(80);
  });

  test("no template of a hosted page keeps English text outside the catalogue", () => {
    for (const { path, text } of sources) {
      if (!/templates\/oidc\/[^/]+\.html$/.test(path)) continue;
      // Text between tags, once expressions and tags are taken out, must be empty.
      const bare = text
        .replace(/\{%[\s\S]*?%\}/g, "")
        .replace(/\{\{[\s\S]*?\}\}/g, "")
        .replace(/<[^>]*>/g, "")
        .replace(/&[a-z]+;/g, "")
        .trim();
      expect({ path, bare }).toEqual({ path, bare: "" });
    }
  });
});
