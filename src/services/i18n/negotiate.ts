// Which language a page or a mail is in (docs/languages.md), first match wins:
//   1. `ui_locales` of the request (OIDC Core §3.1.2.1: space-separated BCP 47 tags, by preference),
//      which the page's language switcher sets too;
//   2. the user's own `locale` (a user field of the REST API), once the user is known;
//   3. the browser's `Accept-Language` (RFC 9110 §12.5.4, by q-value);
//   4. the tenant's default language (`i18n.tenant_default_locales`);
//   5. English.
// A tag matches a catalogue of the same tag, else one of the same language (`fr-CA` → `fr`,
// `pt-PT` → `pt-BR`).
import type { AppContext } from "../../boot/context.ts";
import { availableLocales, REFERENCE_LOCALE } from "./catalogue.ts";

export interface LocalePreferences {
  uiLocales?: string | null;
  userLocale?: string | null;
  acceptLanguage?: string | null;
  tenantDefault?: string | null;
}

/** The catalogue serving `tag`, or null. */
export function matchLocale(tag: string, available: readonly string[] = availableLocales()): string | null {
  const wanted = tag.trim().toLowerCase();
  if (!wanted || wanted === "*") return null;
  const exact = available.find((a) => a.toLowerCase() === wanted);
  if (exact) return exact;
  // Truncation (RFC 4647 §3.4 lookup): `de-CH-1996` → `de-CH` → `de`.
  const parts = wanted.split("-");
  for (let n = parts.length - 1; n >= 1; n--) {
    const prefix = parts.slice(0, n).join("-");
    const hit = available.find((a) => a.toLowerCase() === prefix);
    if (hit) return hit;
  }
  // Another region of the same language.
  const language = parts[0]!;
  return available.find((a) => a.toLowerCase().split("-")[0] === language) ?? null;
}

/** Accept-Language's tags, most preferred first (q=0 means "not this one"). */
export function acceptedTags(header: string | null | undefined): string[] {
  if (!header) return [];
  return header
    .slice(0, 1024)
    .split(",")
    .map((part, index) => {
      const [tag = "", ...params] = part.trim().split(";");
      const q = params.map((p) => /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      return { tag: tag.trim(), q: q === undefined ? 1 : Number(q), index };
    })
    .filter((e) => e.tag && e.q > 0 && !Number.isNaN(e.q))
    .sort((a, b) => b.q - a.q || a.index - b.index)
    .map((e) => e.tag);
}

/** A tenant's default language (`oidc.tenant_default_locales`), else the service's (`oidc.default_locale`). */
export function tenantDefaultLocale(config: AppContext["config"], tenantUuid: string | null | undefined): string {
  const { tenant_default_locales: byTenant, default_locale: fallback } = config.oidc;
  return (tenantUuid ? byTenant[tenantUuid] : undefined) ?? fallback;
}

/** The language of a user's mails: the user's own, else the tenant's default (a mail has no browser to ask). */
export const mailLocale = (
  config: AppContext["config"],
  user: { locale?: string | null; tenantUuid?: string; tenant_uuid?: string },
): string =>
  negotiateLocale({
    userLocale: user.locale,
    tenantDefault: tenantDefaultLocale(config, user.tenantUuid ?? user.tenant_uuid),
  });

export function negotiateLocale(prefs: LocalePreferences, available: readonly string[] = availableLocales()): string {
  const candidates = [
    ...(prefs.uiLocales ?? "").split(/\s+/).slice(0, 20),
    prefs.userLocale ?? "",
    ...acceptedTags(prefs.acceptLanguage),
    prefs.tenantDefault ?? "",
  ];
  for (const tag of candidates) {
    const hit = tag ? matchLocale(tag, available) : null;
    if (hit) return hit;
  }
  return REFERENCE_LOCALE;
}
