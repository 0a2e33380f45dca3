// The message catalogues of the hosted pages and the mails (docs/languages.md): one JSON file per
// language in templates/locales/<BCP 47 tag>.json, a flat object `{"key": "ICU message"}`. English
// (en.json) is the reference: every other catalogue has exactly its keys, with the same arguments
// (tests/web/i18n-catalogues.test.ts). Adding a language is adding one file; it is offered as
// soon as the service starts. A single-file build carries templates/ (scripts/build.ts).
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { embedded } from "../../boot/embedded.ts";
import { formatNodes, type MessageValues, parseMessage } from "./message-format.ts";

export const REFERENCE_LOCALE = "en";
const DIR = fileURLToPath(new URL("../../../templates/locales/", import.meta.url));

/** Scripts written right to left (the page's `dir`): Arabic, Hebrew, Persian, Urdu, Yiddish, Dhivehi, Pashto, Sindhi. */
const RTL = new Set(["ar", "he", "fa", "ur", "yi", "dv", "ps", "sd", "ckb"]);

export interface Catalogue {
  locale: string;
  messages: Record<string, string>;
}

let catalogues: Map<string, Catalogue> | null = null;

function readCatalogues(): Map<string, Catalogue> {
  const files: Array<[string, string]> = [];
  const carried = embedded?.files ?? {};
  const fromBuild = Object.keys(carried).filter((k) => /(^|\/)templates\/locales\/[^/]+\.json$/.test(k));
  if (fromBuild.length) for (const k of fromBuild) files.push([k.split("/").pop()!, carried[k]!]);
  else
    for (const name of readdirSync(DIR)
      .filter((n) => n.endsWith(".json"))
      .sort())
      files.push([name, readFileSync(`${DIR}${name}`, "utf8")]);
  const out = new Map<string, Catalogue>();
  for (const [name, text] of files) {
    const locale = canonicalTag(name.slice(0, -".json".length));
    if (!locale) continue;
    out.set(locale, { locale, messages: JSON.parse(text) as Record<string, string> });
  }
  if (!out.has(REFERENCE_LOCALE)) throw new Error(`templates/locales/${REFERENCE_LOCALE}.json is missing`);
  return out;
}

export function allCatalogues(): Map<string, Catalogue> {
  catalogues ??= readCatalogues();
  return catalogues;
}

/** The languages offered, English first then by tag. */
export function availableLocales(): string[] {
  const tags = [...allCatalogues().keys()].filter((t) => t !== REFERENCE_LOCALE).sort();
  return [REFERENCE_LOCALE, ...tags];
}

/** A tag in its canonical case (`pt-br` → `pt-BR`), or null when it is not a well-formed BCP 47 tag. */
export function canonicalTag(tag: string): string | null {
  if (!tag || tag.length > 35 || !/^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/.test(tag)) return null;
  try {
    return Intl.getCanonicalLocales(tag)[0] ?? null;
  } catch {
    return null;
  }
}

export const textDirection = (locale: string): "ltr" | "rtl" =>
  RTL.has(locale.split("-")[0]!.toLowerCase()) ? "rtl" : "ltr";

const parsed = new Map<string, ReturnType<typeof parseMessage>>();

/** A catalogue's message, formatted; English's when the catalogue lacks it; the key itself when no catalogue has it. */
export function translate(locale: string, key: string, values: MessageValues = {}): string {
  const all = allCatalogues();
  const own = all.get(locale)?.messages[key];
  const source = own ?? all.get(REFERENCE_LOCALE)!.messages[key];
  if (source === undefined) return key;
  const lang = own === undefined ? REFERENCE_LOCALE : locale;
  const cacheKey = `${lang}\0${key}`;
  let nodes = parsed.get(cacheKey);
  if (!nodes) parsed.set(cacheKey, (nodes = parseMessage(source)));
  return formatNodes(nodes, lang, values);
}

/** Whether `key` names a message (the pages translate a message given by key, and show any other text as it is). */
export const isMessageKey = (key: string): boolean => key in allCatalogues().get(REFERENCE_LOCALE)!.messages;

/** A translator bound to one language, as templates receive it (`t("key", {…})`). */
export type Translator = (key: string, values?: MessageValues) => string;
export const translator =
  (locale: string): Translator =>
  (key, values) =>
    translate(locale, key, values ?? {});
