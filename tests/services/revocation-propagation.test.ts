// A revocation travels by its NOTIFY alone: once an instance has heard it (the token left its
// cache), the next check of that token is refused from memory, without a database lookup — a round
// trip that, on a loaded machine, was part of the delay between the revocation and its refusal
// everywhere. On PostgreSQL with two instances (B hears A's revocation), and on one instance.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openDatabase } from "../../src/db/index.ts";
import { createTestApp, databaseKinds, type TestApp } from "../helpers/app.ts";
import { tokenFor } from "../helpers/fixtures.ts";
import { scratchDatabase } from "../helpers/scratch-db.ts";
import { until } from "../helpers/wait.ts";

/** Counts the token lookups `t` sends to its database. */
function countLookups(t: TestApp): { readonly n: number } {
  const counter = { n: 0 };
  const gate = t.app.tokenLookups;
  const lookup = gate.lookup.bind(gate);
  gate.lookup = (uuid: string) => {
    counter.n++;
    return lookup(uuid);
  };
  return counter;
}

describe.skipIf(!databaseKinds().includes("postgres"))("revocation heard by NOTIFY [postgres, two instances]", () => {
  let scratch: Awaited<ReturnType<typeof scratchDatabase>>;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    scratch = await scratchDatabase("tessera_revocation_hop");
    const open = () => openDatabase({ url: scratch.url, poolSize: 4 });
    a = await createTestApp("postgres", { database: open });
    b = await createTestApp("postgres", { database: open });
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await scratch?.drop();
  }, 30_000);

  test("B refuses A's revoked token from memory once it heard the notice", async () => {
    const lookups = countLookups(b);
    for (let i = 0; i < 5; i++) {
      const { token } = await tokenFor(a.app, { acl: ["confd.#"] });
      expect((await b.request("HEAD", `/0.1/token/${token}`)).status).toBe(204);
      expect(b.app.tokenCache.get(token)).toBeDefined();
      expect((await a.request("DELETE", `/0.1/token/${token}`)).status).toBe(200);
      await until(() => b.app.tokenCache.get(token) === undefined); // the NOTIFY reached B
      const before = lookups.n;
      expect((await b.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
      expect((await b.request("GET", `/0.1/token/${token}`)).status).toBe(404);
      expect(lookups.n).toBe(before);
    }
  }, 30_000);
});

describe("revocation on the same instance [pglite]", () => {
  let t: TestApp;
  beforeAll(async () => (t = await createTestApp("pglite")), 60_000);
  afterAll(() => t?.close());

  test("the revoked token is refused from memory, and a new token is still found", async () => {
    const lookups = countLookups(t);
    const { token } = await tokenFor(t.app, { acl: ["confd.#"] });
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(204);
    expect((await t.request("DELETE", `/0.1/token/${token}`)).status).toBe(200);
    const before = lookups.n;
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
    expect(lookups.n).toBe(before);
    const fresh = await tokenFor(t.app, { acl: ["confd.#"] });
    expect((await t.request("HEAD", `/0.1/token/${fresh.token}`)).status).toBe(204);
  }, 30_000);
});
