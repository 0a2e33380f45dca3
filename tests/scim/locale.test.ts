// SCIM `locale` (RFC 7643 §4.1.1) is the user's own `locale` field, the one the users API and the
// hosted pages read: set by POST, PUT and PATCH (canonicalised as the users API does, an invalid tag
// refused with `invalidValue`), returned by GET. Microsoft Entra ID maps its `preferredLanguage` to
// SCIM `preferredLanguage` and sends no `locale`: its first language becomes the user's.
import { expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { users } from "../../src/db/schema.ts";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken, createTenantRow } from "../helpers/fixtures.ts";
import { ERROR_SCHEMA, patchOf, scim, scimToken, USER_SCHEMA } from "../helpers/scim.ts";

describeEachDb("SCIM: locale is the user's language", (get) => {
  let bearer: string;
  let tenant: string;
  const localeOf = async (uuid: string) =>
    (await get().app.db.select({ locale: users.locale }).from(users).where(eq(users.uuid, uuid)))[0]?.locale;

  test("setup: a tenant and its SCIM token", async () => {
    tenant = await createTenantRow(get().app);
    bearer = await scimToken(get(), await adminToken(get().app), tenant);
    expect(bearer.startsWith("tscim_")).toBe(true);
  });

  test("POST with locale: the field is set, canonicalised; GET returns it; not among the kept attributes", async () => {
    const r = await scim(get(), bearer, "POST", "/Users", {
      schemas: [USER_SCHEMA],
      userName: `loc-${crypto.randomUUID()}`,
      locale: "pt-br",
    });
    expect(r.status).toBe(201);
    expect(r.json.locale).toBe("pt-BR");
    expect(await localeOf(r.json.id)).toBe("pt-BR");
    const g = await scim(get(), bearer, "GET", `/Users/${r.json.id}`);
    expect(g.json.locale).toBe("pt-BR");

    // PUT replaces it; PATCH replaces it; PATCH remove clears it.
    const put = await scim(get(), bearer, "PUT", `/Users/${r.json.id}`, { ...g.json, locale: "DE-ch" });
    expect(put.status).toBe(200);
    expect(put.json.locale).toBe("de-CH");
    expect(await localeOf(r.json.id)).toBe("de-CH");
    const p = await scim(
      get(),
      bearer,
      "PATCH",
      `/Users/${r.json.id}`,
      patchOf({ op: "replace", path: "locale", value: "nl" }),
    );
    expect(p.status).toBe(200);
    expect(p.json.locale).toBe("nl");
    expect(await localeOf(r.json.id)).toBe("nl");
    const rm = await scim(get(), bearer, "PATCH", `/Users/${r.json.id}`, patchOf({ op: "remove", path: "locale" }));
    expect(rm.status).toBe(200);
    expect(rm.json.locale).toBeUndefined();
    expect(await localeOf(r.json.id)).toBeNull();
  });

  test("the users API's locale shows in SCIM GET (one field)", async () => {
    const r = await scim(get(), bearer, "POST", "/Users", {
      schemas: [USER_SCHEMA],
      userName: `api-${crypto.randomUUID()}`,
    });
    expect([r.status, r.json.locale]).toEqual([201, undefined]);
    const admin = await adminToken(get().app);
    const put = await get().request("PUT", `/0.1/users/${r.json.id}`, {
      token: admin,
      body: { username: r.json.userName, locale: "it" },
    });
    expect(put.status).toBeLessThan(300);
    expect((await scim(get(), bearer, "GET", `/Users/${r.json.id}`)).json.locale).toBe("it");
  });

  test("an invalid tag: 400 invalidValue in SCIM's error form, nothing written", async () => {
    const userName = `bad-${crypto.randomUUID()}`;
    const r = await scim(get(), bearer, "POST", "/Users", { schemas: [USER_SCHEMA], userName, locale: "not a tag!" });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ schemas: [ERROR_SCHEMA], status: "400", scimType: "invalidValue" });
    const l = await scim(get(), bearer, "GET", `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`);
    expect(l.json.totalResults).toBe(0);

    const ok = await scim(get(), bearer, "POST", "/Users", { schemas: [USER_SCHEMA], userName, locale: "fr" });
    const p = await scim(
      get(),
      bearer,
      "PATCH",
      `/Users/${ok.json.id}`,
      patchOf({ op: "replace", path: "locale", value: 42 }),
    );
    expect(p.status).toBe(400);
    expect(p.json.scimType).toBe("invalidValue");
    expect(await localeOf(ok.json.id)).toBe("fr");
  });

  test("Entra: preferredLanguage (no locale) gives the language, kept as sent; a PATCH of it moves it", async () => {
    const r = await scim(get(), bearer, "POST", "/Users", {
      schemas: [USER_SCHEMA],
      userName: `entra-${crypto.randomUUID()}`,
      active: "True",
      preferredLanguage: "fr-FR",
    });
    expect(r.status).toBe(201);
    expect(r.json.preferredLanguage).toBe("fr-FR");
    expect(r.json.locale).toBe("fr-FR");
    expect(await localeOf(r.json.id)).toBe("fr-FR");
    // Entra's PATCH: PascalCase op, the attribute by path.
    const p = await scim(
      get(),
      bearer,
      "PATCH",
      `/Users/${r.json.id}`,
      patchOf({ op: "Replace", path: "preferredLanguage", value: "de-DE" }),
    );
    expect(p.status).toBe(200);
    expect(p.json.preferredLanguage).toBe("de-DE");
    expect(await localeOf(r.json.id)).toBe("de-DE");
    // The Accept-Language form (RFC 7643 §4.1.1): the highest weight wins; a value that is no tag is kept, not refused.
    const q = await scim(
      get(),
      bearer,
      "PATCH",
      `/Users/${r.json.id}`,
      patchOf({ op: "Replace", path: "preferredLanguage", value: "da;q=0.5, en-gb;q=0.8" }),
    );
    expect(await localeOf(r.json.id)).toBe("en-GB");
    expect(q.json.preferredLanguage).toBe("da;q=0.5, en-gb;q=0.8");
    const odd = await scim(get(), bearer, "POST", "/Users", {
      schemas: [USER_SCHEMA],
      userName: `entra-${crypto.randomUUID()}`,
      preferredLanguage: "??",
    });
    expect(odd.status).toBe(201);
    expect(odd.json.locale).toBeUndefined();
    // Both sent: locale wins (it is the attribute the field is).
    const both = await scim(get(), bearer, "POST", "/Users", {
      schemas: [USER_SCHEMA],
      userName: `entra-${crypto.randomUUID()}`,
      preferredLanguage: "es",
      locale: "es-MX",
    });
    expect(await localeOf(both.json.id)).toBe("es-MX");
  });
});
