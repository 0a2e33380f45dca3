// A first start's signing keys are generated while the service already answers (main.ts starts the
// services with `keysInBackground`): whatever reads them meanwhile — the JWK Set, a signature —
// waits for them, a restart loads the stored ones before answering, and closing waits for a
// generation under way.
import { afterEach, describe, expect, test } from "bun:test";
import { isNull } from "drizzle-orm";
import type { AppContext } from "../../src/boot/context.ts";
import { startServices } from "../../src/boot/startup.ts";
import { parseConfig } from "../../src/config/config.ts";
import { openDatabase } from "../../src/db/index.ts";
import { oidcKeys } from "../../src/db/schema.ts";
import { silentLogger } from "../../src/observe/log.ts";
import { buildContext, closeContext } from "../../src/services/app-context.ts";
import { ensureSigningKeys, prepareSigningKeys, signingKey, signingKeysChanged } from "../../src/services/oidc/keys.ts";
import { createTestApp, currentDatabaseUrl, databaseKinds, type TestApp } from "../helpers/app.ts";
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

/** Back to a first start: no key stored, none in memory. */
async function forgetKeys(...apps: AppContext[]): Promise<void> {
  await apps[0]!.db.delete(oidcKeys);
  for (const app of apps) signingKeysChanged(app);
}

/** The algorithms of the stored key rows, sorted: exactly one per algorithm is what a first start leaves. */
async function storedAlgs(app: AppContext): Promise<string[]> {
  return (await app.db.select({ alg: oidcKeys.alg }).from(oidcKeys)).map((r) => r.alg).sort();
}

for (const kind of databaseKinds()) {
  test(`concurrent first generations in one process store one key per algorithm, five rounds [${kind}]`, async () => {
    const t = await createTestApp(kind, { services: false });
    try {
      for (let round = 0; round < 5; round++) {
        await forgetKeys(t.app);
        // The start's background generation, the start checks' load, a signature, a reload after a notice.
        await prepareSigningKeys(t.app);
        const [, , es256] = await Promise.all([
          ensureSigningKeys(t.app),
          ensureSigningKeys(t.app),
          signingKey(t.app, "ES256"),
          ensureSigningKeys(t.app),
        ]);
        expect(await storedAlgs(t.app)).toEqual(["ES256", "RS256"]);
        expect((await signingKey(t.app, "ES256")).kid).toBe(es256.kid);
      }
    } finally {
      await t.close();
    }
  }, 60_000);
}

describe.skipIf(!process.env.TEST_DATABASE_URL)("two instances starting on one PostgreSQL [postgres]", () => {
  test("their concurrent first generations store one key per algorithm, and both sign with it, five rounds", async () => {
    const first = await createTestApp("postgres", { services: false });
    const secondDb = await openDatabase({ url: await currentDatabaseUrl(first.app), poolSize: 3 });
    const second = await buildContext(parseConfig({ token_cleanup_interval: 0 }), secondDb, silentLogger);
    try {
      for (let round = 0; round < 5; round++) {
        await forgetKeys(first.app, second);
        await Promise.all([
          ensureSigningKeys(first.app),
          ensureSigningKeys(second),
          ensureSigningKeys(first.app),
          ensureSigningKeys(second),
        ]);
        expect(await storedAlgs(first.app)).toEqual(["ES256", "RS256"]);
        for (const alg of ["ES256", "RS256"] as const)
          expect((await signingKey(second, alg)).kid).toBe((await signingKey(first.app, alg)).kid);
      }
    } finally {
      await closeContext(second);
      await first.close();
    }
  }, 90_000);
});
