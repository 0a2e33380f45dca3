// No list fails at size: with a subtree larger than PostgreSQL's 65,535 bind parameters, every
// list computes the caller's visible tenants in SQL (a recursive query over the tree) rather than
// sending them as a parameter list (which answered 500 MAX_PARAMETERS_EXCEEDED). The tenants are
// inserted with one statement, so the reproduction costs a second, not a hundred thousand requests.
import { expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { execRows } from "../../src/db/index.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";

const WIDE = 66_000; // more descendants than bind parameters PostgreSQL accepts in one statement

describeEachDb(
  "lists over a subtree of 66,000 tenants",
  (get) => {
    let big = "";
    let deep = "";
    let sibling = "";
    let deepUser = "";
    let siblingUser = "";

    test("setup: one statement inserts the wide subtree", async () => {
      const t = get();
      big = await createTenantRow(t.app, { name: "big" });
      sibling = await createTenantRow(t.app, { name: "sibling" });
      await t.app.db.execute(sql`insert into auth_tenant (uuid, name, slug, parent_uuid)
      select gen_random_uuid()::text, 'wide' || i, 'w' || i, ${big} from generate_series(1, ${WIDE}) i`);
      deep = await createTenantRow(t.app, {
        name: "deep",
        parentUuid: await createTenantRow(t.app, { name: "middle", parentUuid: big }),
      });
      deepUser = await createUserRow(t.app, { tenantUuid: deep, username: "needle-deep" });
      siblingUser = await createUserRow(t.app, { tenantUuid: sibling, username: "needle-sibling" });
      await t.app.db.execute(sql`analyze auth_tenant`);
      t.app.tenantTree.invalidate();
    }, 120_000);

    test("the master tenant's admin lists every tenant, paged and whole", async () => {
      const t = get();
      const { token } = await tokenFor(t.app, { acl: ["auth.#"] });
      const page = await t.request("GET", "/0.1/tenants?limit=5000", { token });
      expect(page.status).toBe(200);
      expect(page.json.items.length).toBe(5000);
      expect(page.json.total).toBeGreaterThanOrEqual(WIDE + 5);
      const whole = await t.request("GET", "/0.1/tenants", { token });
      expect(whole.status).toBe(200);
      expect(whole.json.items.length).toBe(whole.json.total);
      const users = await t.request("GET", "/0.1/users?recurse=true&search=needle", { token });
      expect([users.status, users.json.items.map((u: { uuid: string }) => u.uuid).sort()]).toEqual([
        200,
        [deepUser, siblingUser].sort(),
      ]);
    }, 120_000);

    test("a subtree admin sees its 66,002 tenants and their rows, and nothing of its sibling", async () => {
      const t = get();
      const { token, userUuid: bigAdmin } = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: big });
      const tenants = await t.request("GET", "/0.1/tenants?limit=10&search=deep", { token });
      expect([tenants.status, tenants.json.total, tenants.json.items.map((i: { uuid: string }) => i.uuid)]).toEqual([
        200,
        WIDE + 3,
        [deep],
      ]);
      const users = await t.request("GET", "/0.1/users?recurse=true&search=needle", { token });
      expect([users.status, users.json.items.map((u: { uuid: string }) => u.uuid)]).toEqual([200, [deepUser]]);
      const everyUser = await t.request("GET", "/0.1/users?recurse=true", { token });
      expect(everyUser.json.items.map((u: { uuid: string }) => u.uuid).sort()).toEqual([bigAdmin, deepUser].sort());
      expect(everyUser.json.total).toBe(2);
      for (const path of [
        "/0.1/groups?recurse=true",
        "/0.1/policies?recurse=true",
        "/0.1/sessions?recurse=true",
        "/0.1/tokens?recurse=true",
      ]) {
        const r = await t.request("GET", path, { token });
        expect([path, r.status]).toEqual([path, 200]);
        const tenantsSeen = new Set(r.json.items.map((i: { tenant_uuid?: string }) => i.tenant_uuid));
        expect(tenantsSeen.has(sibling)).toBe(false);
      }
      const groups = await t.request("GET", "/0.1/groups?recurse=true&search=wazo-all-users", { token });
      expect(groups.json.items.map((g: { tenant_uuid: string }) => g.tenant_uuid).sort()).toEqual(
        [big, deep, await parentOf(deep)].sort(),
      );
      const sessions = await t.request("GET", "/0.1/sessions?recurse=true", { token });
      expect(sessions.json.items.map((s: { tenant_uuid: string }) => s.tenant_uuid)).toEqual([big]);
      const siblingAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: sibling })).token;
      const fromSibling = await t.request("GET", "/0.1/users?recurse=true&search=needle", { token: siblingAdmin });
      expect(fromSibling.json.items.map((u: { uuid: string }) => u.uuid)).toEqual([siblingUser]);
      expect((await t.request("GET", "/0.1/tenants?recurse=true", { token: siblingAdmin })).json.total).toBe(1);
    }, 120_000);

    test("a tenant moves under one of 66,000 siblings, never under its own descendant, and out of the subtree", async () => {
      const t = get();
      const { token } = await tokenFor(t.app, { acl: ["auth.#"] });
      const cycle = await t.request("PUT", `/0.1/tenants/${big}/parent/${deep}`, { token });
      expect(cycle.status).toBe(409);
      const [wide] = await execRows<{ uuid: string }>(
        t.app.db,
        sql`select uuid from auth_tenant where slug = 'w65000'`,
      );
      expect((await t.request("PUT", `/0.1/tenants/${deep}/parent/${wide!.uuid}`, { token })).status).toBe(204);
      expect(await parentOf(deep)).toBe(wide!.uuid);
      // Out of the big subtree, under the sibling: its users change sides at once, for both admins.
      const bigAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: big })).token;
      const siblingAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: sibling })).token;
      const needles = async (as: string) =>
        (await t.request("GET", "/0.1/users?recurse=true&search=needle", { token: as })).json.items
          .map((u: { uuid: string }) => u.uuid)
          .sort();
      expect(await needles(bigAdmin)).toEqual([deepUser]);
      expect((await t.request("PUT", `/0.1/tenants/${deep}/parent/${sibling}`, { token })).status).toBe(204);
      expect(await needles(bigAdmin)).toEqual([]);
      expect(await needles(siblingAdmin)).toEqual([deepUser, siblingUser].sort());
      expect((await t.request("GET", `/0.1/tenants/${deep}`, { token: bigAdmin })).status).toBe(404);
      expect((await t.request("GET", "/0.1/tenants?recurse=true", { token: siblingAdmin })).json.total).toBe(2);
    }, 120_000);

    async function parentOf(uuid: string): Promise<string> {
      const row = await get().app.db.query.tenants.findFirst({ where: (x, { eq }) => eq(x.uuid, uuid) });
      return row!.parentUuid;
    }
  },
  { config: { db_timeout: 60 } },
); // the unpaged list of 66,000 tenants, on a loaded machine
