// The user's `locale` (issue 43, a Tessera addition to wazo-auth's user resource): a BCP 47 tag,
// stored canonical, shown by GET and the list, kept by a PUT that does not name it, audited; a
// malformed tag is a 400 and writes nothing; another tenant's administrator changes nothing.
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/app.ts";
import { tenantFamily } from "../helpers/fixtures.ts";

describeEachDb("the user's locale", (get) => {
  test("create, read, list, replace; a PUT without it keeps it; null clears it", async () => {
    const t = get();
    const { admin } = await tenantFamily(t.app);
    const name = `loc-${crypto.randomUUID().slice(0, 8)}`;
    const created = await t.request("POST", "/0.1/users", { token: admin, body: { username: name, locale: "pt-br" } });
    expect([created.status, created.json.locale]).toEqual([200, "pt-BR"]);
    const uuid = created.json.uuid;
    expect((await t.request("GET", `/0.1/users/${uuid}`, { token: admin })).json.locale).toBe("pt-BR");
    const listed = await t.request("GET", `/0.1/users?search=${name}`, { token: admin });
    expect(listed.json.items.map((u: { locale: string }) => u.locale)).toEqual(["pt-BR"]);

    let r = await t.request("PUT", `/0.1/users/${uuid}`, { token: admin, body: { username: name, firstname: "Ana" } });
    expect(r.status).toBeLessThan(300);
    expect((await t.request("GET", `/0.1/users/${uuid}`, { token: admin })).json).toMatchObject({
      firstname: "Ana",
      locale: "pt-BR",
    });
    r = await t.request("PUT", `/0.1/users/${uuid}`, { token: admin, body: { username: name, locale: "FR" } });
    expect((await t.request("GET", `/0.1/users/${uuid}`, { token: admin })).json.locale).toBe("fr");
    r = await t.request("PUT", `/0.1/users/${uuid}`, { token: admin, body: { username: name, locale: null } });
    expect((await t.request("GET", `/0.1/users/${uuid}`, { token: admin })).json.locale).toBeNull();

    const audit = await t.request("GET", `/0.1/audit?target_uuid=${uuid}&action=user.update`, { token: admin });
    expect(audit.status).toBe(200);
    const changes = audit.json.items.flatMap((e: { changes?: Array<{ field: string }> }) => e.changes ?? []);
    expect(changes.filter((c: { field: string }) => c.field === "locale").length).toBe(2);
  });

  test("a malformed tag is a 400 naming the field, and nothing is written", async () => {
    const t = get();
    const { admin } = await tenantFamily(t.app);
    const name = `bad-${crypto.randomUUID().slice(0, 8)}`;
    for (const locale of ["fr_FR", "<b>", "x".repeat(40), 12]) {
      const r = await t.request("POST", "/0.1/users", { token: admin, body: { username: name, locale } });
      expect([r.status, r.json.error_id, Object.keys(r.json.details)]).toEqual([400, "invalid-data", ["locale"]]);
    }
    expect((await t.request("GET", `/0.1/users?search=${name}`, { token: admin })).json.items).toEqual([]);
  });

  test("another tenant's administrator cannot set it", async () => {
    const t = get();
    const { admin, siblingAdmin } = await tenantFamily(t.app);
    const name = `iso-${crypto.randomUUID().slice(0, 8)}`;
    const uuid = (await t.request("POST", "/0.1/users", { token: admin, body: { username: name, locale: "de" } })).json
      .uuid;
    const r = await t.request("PUT", `/0.1/users/${uuid}`, {
      token: siblingAdmin,
      body: { username: name, locale: "it" },
    });
    expect(r.status).toBe(404);
    expect((await t.request("GET", `/0.1/users/${uuid}`, { token: admin })).json.locale).toBe("de");
  });
});
