// Which language a page is in (docs/languages.md): ui_locales (OIDC Core §3.1.2.1), then the user's
// own locale, then Accept-Language, then the tenant's default, then oidc.default_locale; and the
// message format's plurals and dates per locale.
import { describe, expect, test } from "bun:test";
import { textDirection, translate } from "../../src/services/i18n/catalogue.ts";
import { formatNodes, parseMessage } from "../../src/services/i18n/message-format.ts";
import { acceptedTags, matchLocale, negotiateLocale } from "../../src/services/i18n/negotiate.ts";

const AVAILABLE = ["en", "de", "es", "fr", "it", "nl", "pt-BR"];

describe("language negotiation", () => {
  const table: Array<[string, Parameters<typeof negotiateLocale>[0], string]> = [
    ["nothing: English", {}, "en"],
    [
      "ui_locales wins over everything",
      { uiLocales: "de", userLocale: "fr", acceptLanguage: "es", tenantDefault: "it" },
      "de",
    ],
    ["ui_locales is a list by preference; an unknown tag is skipped", { uiLocales: "ja  nl-BE fr" }, "nl"],
    ["ui_locales with nothing known: the user's locale", { uiLocales: "ja ko", userLocale: "fr" }, "fr"],
    ["the user's locale before the browser's", { userLocale: "it", acceptLanguage: "de" }, "it"],
    ["Accept-Language by q-value", { acceptLanguage: "en;q=0.5, fr-CA;q=0.9, de;q=0.8" }, "fr"],
    ["Accept-Language: q=0 refuses, * is no language", { acceptLanguage: "fr;q=0, *;q=0.9, es;q=0.1" }, "es"],
    [
      "Accept-Language with nothing known: the tenant's default",
      { acceptLanguage: "ja, zh-CN", tenantDefault: "nl" },
      "nl",
    ],
    ["the tenant's default before English", { tenantDefault: "pt-BR" }, "pt-BR"],
    ["a region the catalogues lack: the language's catalogue", { uiLocales: "de-AT" }, "de"],
    ["Portugal's Portuguese: the Brazilian catalogue", { acceptLanguage: "pt-PT" }, "pt-BR"],
    ["case does not matter", { uiLocales: "PT-br" }, "pt-BR"],
    [
      "malformed input is ignored",
      { uiLocales: "\u0000<script>", acceptLanguage: ";;;,,q=", tenantDefault: "xx" },
      "en",
    ],
  ];
  for (const [name, prefs, expected] of table)
    test(name, () => expect(negotiateLocale(prefs, AVAILABLE)).toBe(expected));

  test("Accept-Language parsing keeps the header's order among equal q-values", () => {
    expect(acceptedTags("de-CH, de;q=0.9, en;q=0.9, fr;q=0.8")).toEqual(["de-CH", "de", "en", "fr"]);
    expect(acceptedTags(null)).toEqual([]);
  });

  test("dir follows the language: right to left for Arabic, Hebrew, Persian, Urdu", () => {
    expect(["ar", "he-IL", "fa", "ur-PK", "fr", "pt-BR", "en"].map(textDirection)).toEqual([
      "rtl",
      "rtl",
      "rtl",
      "rtl",
      "ltr",
      "ltr",
      "ltr",
    ]);
  });

  test("matching: exact, truncated, then another region of the language", () => {
    expect(matchLocale("de-CH-1996", AVAILABLE)).toBe("de");
    expect(matchLocale("pt", AVAILABLE)).toBe("pt-BR");
    expect(matchLocale("ja", AVAILABLE)).toBeNull();
  });
});

describe("messages per locale", () => {
  const format = (message: string, locale: string, values: Record<string, number | string>) =>
    formatNodes(parseMessage(message), locale, values);

  test("plural categories follow the locale (French 0 and 1 are one; English 0 is other)", () => {
    const m = "{n, plural, one {# code} other {# codes}}";
    expect([0, 1, 2].map((n) => format(m, "fr", { n }))).toEqual(["0 code", "1 code", "2 codes"]);
    expect([0, 1, 2].map((n) => format(m, "en", { n }))).toEqual(["0 codes", "1 code", "2 codes"]);
    expect(format("{n, plural, =0 {none} other {# left}}", "de", { n: 0 })).toBe("none");
    expect(format("{n, number}", "de", { n: 1234 })).toBe("1.234");
  });

  test("dates in each locale's own form (UTC)", () => {
    const at = "2026-03-05T10:00:00Z";
    const on = (locale: string) => translate(locale, "account.passkey_added", { added: at });
    expect(on("en")).toBe(
      "added 5 Mar 2026".replace(
        "5 Mar 2026",
        new Intl.DateTimeFormat("en", { dateStyle: "medium", timeZone: "UTC" }).format(new Date(at)),
      ),
    );
    expect(on("fr")).toBe("ajoutée le 5 mars 2026");
    expect(on("de")).toBe("hinzugefügt am 05.03.2026");
    expect(on("nl")).toBe("toegevoegd op 5 mrt 2026");
  });

  test("catalogue plurals per language: recovery codes left", () => {
    const left = (locale: string, n: number) =>
      translate(locale, "account.totp_on", { since: "2026-01-02T00:00:00Z", left: n });
    expect(left("fr", 1)).toContain("1 code de secours restant.");
    expect(left("fr", 0)).toContain("Plus aucun code de secours.");
    expect(left("de", 3)).toContain("Noch 3 Wiederherstellungscodes übrig.");
    expect(left("pt-BR", 1)).toContain("Resta 1 código de recuperação.");
    expect(left("es", 2)).toContain("Te quedan 2 códigos de recuperación.");
  });

  test("quoting as ICU: '' is an apostrophe, '{…}' is literal; a missing key is shown as it is", () => {
    expect(format("it''s '{'literal'}' {x}", "en", { x: "ok" })).toBe("it's {literal} ok");
    expect(format("d'accord, {x}", "fr", { x: "Anne" })).toBe("d'accord, Anne");
    expect(translate("fr", "Some service text.")).toBe("Some service text.");
  });
});
