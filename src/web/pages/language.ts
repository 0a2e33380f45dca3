// The language of a hosted page (docs/languages.md): negotiated per request from `ui_locales`, the
// user's own `locale`, Accept-Language, the tenant's default, then `oidc.default_locale`
// (services/i18n/negotiate.ts). The page's texts come from the catalogues: a template writes
// `{{ t("key", {…}) }}`, and a message a route hands the page (`message`, `title`, `notice`) is a
// PageText: a catalogue key, a key with its values, or — for text a service wrote (an error
// refusal) — the text as it is.
import type { Context } from "hono";
import type { AppContext } from "../../boot/context.ts";
import type { Env } from "../../http/route.ts";
import { availableLocales, translate } from "../../services/i18n/catalogue.ts";
import type { MessageValues } from "../../services/i18n/message-format.ts";
import { negotiateLocale, tenantDefaultLocale } from "../../services/i18n/negotiate.ts";
import { nunjucks } from "../../services/templating.ts";

/** A catalogue key (shown translated), a key with its values, or a service's own text (shown as it is). */
export type PageText = string | { key: string; values?: MessageValues };

export const msg = (key: string, values?: MessageValues): PageText => ({ key, values });

const KNOWN_SCOPES = new Set(["openid", "profile", "email", "offline_access"]);

/** What a scope means, in words a person understands (the consent screen and the device page list these). */
export const scopeText = (scope: string): PageText =>
  KNOWN_SCOPES.has(scope) ? `scope.${scope}` : msg("scope.other", { scope });

export interface LocaleHints {
  /** `ui_locales` carried by the page's own forms (the request's query is read here). */
  uiLocales?: string | null;
  userLocale?: string | null;
  tenantUuid?: string | null;
}

/** The page's language for this request. */
export function requestLocale(c: Context, app: AppContext, hints: LocaleHints = {}): string {
  return negotiateLocale({
    uiLocales: c.req.query("ui_locales") || hints.uiLocales,
    userLocale: hints.userLocale,
    acceptLanguage: c.req.header("Accept-Language"),
    tenantDefault: tenantDefaultLocale(app.config, hints.tenantUuid),
  });
}

export interface LanguageLink {
  tag: string;
  name: string;
  href: string;
  current: boolean;
}

/**
 * The language switcher: for a page answering a GET, one link per catalogue, the same address with
 * `ui_locales` set (no script, no cookie: the forms carry `ui_locales` on to the next steps). A page
 * answering a form has none (its address would not show it again).
 */
export function languageLinks(c: Context<Env>, locale: string): LanguageLink[] {
  if (c.req.method !== "GET") return [];
  const url = new URL(c.req.url);
  return availableLocales().map((tag) => {
    const params = new URLSearchParams(url.search);
    params.set("ui_locales", tag);
    return { tag, name: translate(tag, "language.name"), href: `?${params}`, current: tag === locale };
  });
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!);

/** A value a template sets inside a message as markup (`strong(user)`): escaped, then wrapped. */
interface Markup {
  __markup: string;
}
const markup = (tag: string, cls?: string) => (value: unknown) => ({
  __markup: `<${tag}${cls ? ` class="${cls}"` : ""}>${escapeHtml(String(value ?? ""))}</${tag}>`,
});
const isMarkup = (v: unknown): v is Markup => typeof v === "object" && v !== null && "__markup" in v;

/**
 * What a page's template calls: `t(key, values)` (escaped text, with `strong(…)`-style values as
 * markup), `text(pageText)`, and the markup helpers. Everything returned is escaped here.
 */
export function templateHelpers(locale: string) {
  const { SafeString } = nunjucks().runtime;
  const t = (key: string, values: Record<string, unknown> = {}) => {
    const plain: MessageValues = {};
    const marks: string[] = [];
    for (const [k, v] of Object.entries(values)) {
      if (isMarkup(v)) {
        plain[k] = `\u0000${marks.length}\u0000`;
        marks.push(v.__markup);
      } else plain[k] = v as MessageValues[string];
    }
    const html = escapeHtml(translate(locale, key, plain)).replace(/\u0000(\d+)\u0000/g, (_, i) => marks[Number(i)]!);
    return new SafeString(html);
  };
  return {
    t,
    text: (value: PageText | null | undefined) => new SafeString(escapeHtml(pageText(locale, value))),
    strong: markup("strong"),
    span_user: markup("span", "user"),
    span_secret: markup("span", "secret"),
  };
}

/** A PageText in `locale`: a key is translated, any other text is shown as it is. */
export function pageText(locale: string, value: PageText | null | undefined): string {
  if (value === null || value === undefined) return "";
  // A key is translated; any other text (no catalogue has it as a key) comes back as it is.
  return typeof value === "object" ? translate(locale, value.key, value.values ?? {}) : translate(locale, value);
}
