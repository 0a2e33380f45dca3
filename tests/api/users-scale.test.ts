// Lists stay fast with 100,000 users (PostgreSQL only: seeding that many rows in PGlite is slow).
import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createTestApp } from "../helpers/app.ts";
import { createTenantRow, tokenFor } from "../helpers/fixtures.ts";

describe.skipIf(!process.env.TEST_DATABASE_URL)("users at scale [postgres]", () => {
  test("a filtered, paged list of 100,000 users answers quickly", async () => {
    const t = await createTestApp("postgres");
    try {
      const tenant = await createTenantRow(t.app);
      await t.app.db.execute(sql`insert into auth_user (uuid, username, firstname, lastname, tenant_uuid, purpose)
        select gen_random_uuid()::text, 'user' || i, 'first' || (i % 1000), 'last' || i, ${tenant}, 'user' from generate_series(1, 100000) i`);
      await t.app.db.execute(sql`analyze auth_user`);
      const { token } = await tokenFor(t.app, { acl: ["auth.users.read"], tenantUuid: tenant });
      const started = performance.now();
      const r = await t.request("GET", "/0.1/users?search=first42&order=lastname&limit=20&offset=40", { token });
      const ms = performance.now() - started;
      console.log(`GET /users over 100,000 users (search, order, page): ${ms.toFixed(0)} ms`);
      expect(r.status).toBe(200);
      expect(r.json.total).toBe(100001);
      expect(r.json.filtered).toBe(1100); // first42, first420..first429 and the like: 11 × 100
      expect(r.json.items.length).toBe(20);
      expect(ms).toBeLessThan(2000);
      const t1 = performance.now();
      const page = await t.request("GET", "/0.1/users?order=username&limit=20&offset=50000", { token });
      const pageMs = performance.now() - t1;
      console.log(`GET /users over 100,000 users (order, deep page): ${pageMs.toFixed(0)} ms`);
      expect(page.json.items.length).toBe(20);
      const t2 = performance.now();
      const exact = await t.request("GET", "/0.1/users?username=user77777", { token });
      console.log(`GET /users over 100,000 users (exact username filter): ${(performance.now() - t2).toFixed(0)} ms`);
      expect(exact.json.filtered).toBe(1);
    } finally {
      await t.close();
    }
  }, 120_000);
});
