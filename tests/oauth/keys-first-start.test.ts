// A first start's signing keys are generated while the service already answers (main.ts starts the
// services with `keysInBackground`): whatever reads them meanwhile — the JWK Set, a signature —
// waits for them, a restart loads the stored ones before answering, and closing waits for a
// generation under way.
import { afterEach, describe, expect, test } from "bun:test";
import { isNull } from "drizzle-orm";
import { startServices } from "../../src/boot/startup.ts";
import { oidcKeys } from "../../src/db/schema.ts";
import { prepareSigningKeys, signingKey } from "../../src/services/oidc/keys.ts";
import { createTestApp, databaseKinds, type TestApp } from "../helpers/app.ts";
import { until } from "../helpers/wait.ts";

for (const kind of databaseKinds()) {
  describe(`signing keys generated in the background [${kind}]`, () => {
    const apps: TestApp[] = [];
    afterEach(async () => {
      for (const t of apps.splice(0)) await t.close();
    });

    test("the JWK Set asked right after the start holds both keys, and signatures use them", async () => {
      const t = await createTestApp(kind, { services: false });
      apps.push(t);
      expect(await t.app.db.select().from(oidcKeys)).toHaveLength(0); // a first start
      await startServices(t.app, { keysInBackground: true });
      const r = await t.request("GET", "/0.1/oidc/jwks");
      expect(r.status).toBe(200);
      const keys = (r.json as { keys: Array<{ alg: string; kid: string }> }).keys;
      expect(keys.map((k) => k.alg).sort()).toEqual(["ES256", "RS256"]);
      const es256 = await signingKey(t.app, "ES256");
      expect(keys.find((k) => k.alg === "ES256")?.kid).toBe(es256.kid);
      // Exactly one key per algorithm was made: the JWK Set's read did not start a second generation.
      const rows = await t.app.db.select().from(oidcKeys).where(isNull(oidcKeys.retiredAt));
      expect(rows.map((k) => k.alg).sort()).toEqual(["ES256", "RS256"]);
    });

    test("keys already stored (a restart) are loaded before the start returns, and none is generated", async () => {
      const t = await createTestApp(kind, { services: false });
      apps.push(t);
      await startServices(t.app, { keysInBackground: true });
      const made = (await signingKey(t.app, "RS256")).kid;
      // The background generation stored (a row per algorithm at least): what a restart then finds.
      const stored = async () => (await t.app.db.select().from(oidcKeys)).length;
      await until(async () => (await stored()) >= 2, 10_000);
      const before = await stored();
      await prepareSigningKeys(t.app); // what a restart's start does with the rows present
      expect((await signingKey(t.app, "RS256")).kid).toBe(made);
      expect(await stored()).toBe(before); // nothing generated
    });

    test("closing right after the start waits for the generation under way, which completes", async () => {
      const t = await createTestApp(kind, { services: false });
      await startServices(t.app, { keysInBackground: true });
      let rows = -1;
      // The last close hook before the database closes: counts what the generation wrote.
      t.app.onClose.unshift(async () => {
        rows = (await t.app.db.select().from(oidcKeys)).length;
      });
      await t.close();
      expect(rows).toBe(2);
    });
  });
}
