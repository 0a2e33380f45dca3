// Unknown tokens are answered 404 by the token check's shortcut: with no query at all on PGlite (the
// embedded database's token ids are all in memory), else remembered briefly after one lookup through
// a bounded gate (a flood of made-up tokens must not slow valid checks; speed itself is measured by
// bench/flood.ts). What must hold: valid tokens are never refused — cached or not, issued before or
// after the process started — unknown ones are 404, and an id becomes valid the moment a token with
// it is created, even right after it was looked up as unknown.
import { expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../src/db/index.ts";
import { revokeToken } from "../../src/services/auth/sessions.ts";
import { LookupGate } from "../../src/services/auth/lookup-gate.ts";
import { insertToken, tokenReader } from "../../src/services/auth/tokens.ts";
import type { TokenRow } from "../../src/db/tables/tokens.ts";
import { createTestApp, describeEachDb, type TestApp } from "../helpers/app.ts";
import { createUserRow, tokenFor } from "../helpers/fixtures.ts";

/** Counts the database lookups of tokens missing from the cache. */
function countLookups(t: TestApp): () => number {
  let n = 0;
  const gate = t.app.tokenLookups;
  const lookup = gate.lookup.bind(gate);
  gate.lookup = (uuid) => {
    n++;
    return lookup(uuid);
  };
  return () => n;
}

describeEachDb("token checks under a flood of unknown tokens", (get) => {
  test("a token created after its id was looked up as unknown is accepted at once", async () => {
    const t = get();
    const id = randomUUID();
    expect((await t.request("HEAD", `/0.1/token/${id}`)).status).toBe(404);
    // PostgreSQL remembers the lookup's answer; PGlite needed none (the id is not in its id set)
    expect(t.kind === "pglite" ? !t.app.tokenIds!.mayExist(id) : t.app.tokenCache.knownUnknown(id)).toBe(true);
    const userUuid = await createUserRow(t.app);
    await insertToken(t.app, t.app.db, {
      uuid: id,
      authId: userUuid,
      pbxUserUuid: null,
      acl: ["confd.#"],
      metadata: { uuid: userUuid, tenant_uuid: t.app.topTenantUuid, auth_id: userUuid },
      expiration: 3600,
      userAgent: "tests",
      remoteAddr: "127.0.0.1",
      sessionTenantUuid: t.app.topTenantUuid,
      mobile: false,
    });
    expect((await t.request("HEAD", `/0.1/token/${id}?scope=confd.users.read`)).status).toBe(204);
  });

  test("during a burst of unknown tokens, valid checks answer 204 and unknown ones 404, never anything else", async () => {
    const t = get();
    const { token } = await tokenFor(t.app, { acl: ["confd.#"] });
    const uncached = await tokenFor(t.app, { acl: ["confd.#"] });
    const unknown = Array.from({ length: 300 }, () =>
      t.request("HEAD", `/0.1/token/${randomUUID()}`).then((r) => r.status),
    );
    const valid = Array.from({ length: 50 }, () =>
      t.request("HEAD", `/0.1/token/${token}?scope=confd.users.read`).then((r) => r.status),
    );
    const firstLookup = t.request("HEAD", `/0.1/token/${uncached.token}`).then((r) => r.status);
    expect(new Set(await Promise.all(unknown))).toEqual(new Set([404]));
    expect(new Set(await Promise.all(valid))).toEqual(new Set([204]));
    expect(await firstLookup).toBe(204);
  });

  test("an expired token stays refused", async () => {
    const t = get();
    // Expiry is kept in whole seconds (wazo-auth's expire_t: the issue time plus the lifetime,
    // truncated), so a 1 s token issued late in a second is expired a few ms later: 2 s leaves at
    // least one second before the first check (CI once checked past it, on both databases).
    const { token } = await tokenFor(t.app, { acl: ["confd.#"], expiration: 2 });
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(204);
    await Bun.sleep(3100);
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
  });

  test("made-up tokens are 404 without routing; each costs at most one lookup, none on PGlite", async () => {
    const t = get();
    const lookups = countLookups(t);
    const ids = Array.from({ length: 300 }, () => crypto.randomUUID());
    for (const id of ids) expect((await t.request("HEAD", `/0.1/token/${id}?scope=a.b`)).status).toBe(404);
    expect(lookups()).toBe(t.kind === "pglite" ? 0 : ids.length);
    for (const id of ids) expect((await t.request("HEAD", `/0.1/token/${id}`)).status).toBe(404);
    expect(lookups()).toBe(t.kind === "pglite" ? 0 : ids.length); // remembered as unknown
  });

  test("a token that exists is never 404: cached, dropped from the cache, or made while the flood runs", async () => {
    const t = get();
    const flood = Promise.all(
      Array.from({ length: 200 }, () => t.request("HEAD", `/0.1/token/${crypto.randomUUID()}?scope=a.b`)),
    );
    const made = await Promise.all(Array.from({ length: 20 }, () => tokenFor(t.app, { acl: ["a.b"] })));
    for (const { token } of made) expect((await t.request("HEAD", `/0.1/token/${token}?scope=a.b`)).status).toBe(204);
    t.app.tokenCache.clear();
    const answers = await Promise.all(made.map(({ token }) => t.request("HEAD", `/0.1/token/${token}?scope=a.b`)));
    expect(answers.map((r) => r.status)).toEqual(made.map(() => 204));
    expect((await flood).every((r) => r.status === 404)).toBe(true);
  });

  test("the ids asked for in one turn are read in one query; a full gate is a 503, never a 404", async () => {
    const t = get();
    const reads: number[] = [];
    const read = tokenReader(t.app.db);
    const gate = new LookupGate<TokenRow>((ids) => (reads.push(ids.length), read(ids)), 1, 150);
    const real = await Promise.all(Array.from({ length: 5 }, () => tokenFor(t.app, { acl: ["a.b"] })));
    const ids = [...real.map((r) => r.token), ...Array.from({ length: 95 }, () => randomUUID())];
    const rows = await Promise.all([...ids, ...ids].map((id) => gate.lookup(id)));
    expect(reads).toEqual([100]); // one read, each id once
    expect(rows.map((r) => r?.uuid ?? null)).toEqual([...ids, ...ids].map((id, i) => (i % 100 < 5 ? id : null)));
    const burst = Array.from({ length: 200 }, () =>
      gate.lookup(randomUUID()).then(
        () => 200,
        (e: { status?: number }) => e.status,
      ),
    );
    const statuses = await Promise.all(burst);
    expect(statuses.filter((s) => s === 503).length).toBe(50);
    expect(statuses.filter((s) => s === 200).length).toBe(150);
    expect(reads.slice(1).reduce((a, b) => a + b, 0)).toBe(150);
  });

  test("a revoked token leaves the id set (PGlite) and is 404", async () => {
    const t = get();
    const { token } = await tokenFor(t.app, { acl: ["a.b"] });
    if (t.kind === "pglite") expect(t.app.tokenIds!.mayExist(token)).toBe(true);
    else expect(t.app.tokenIds).toBeNull();
    await revokeToken(t.app, token);
    for (let i = 0; i < 50 && t.app.tokenIds?.mayExist(token); i++) await Bun.sleep(10); // the NOTIFY
    if (t.kind === "pglite") expect(t.app.tokenIds!.mayExist(token)).toBe(false);
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
  });
});

test("PGlite: the tokens already in the data directory are known after a restart", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tessera-token-ids-"));
  try {
    const first = await createTestApp("pglite", { database: () => openDatabase({ dataDir: join(dir, "data") }) });
    const { token } = await tokenFor(first.app, { acl: ["a.b"] });
    await first.close();
    const second = await createTestApp("pglite", { database: () => openDatabase({ dataDir: join(dir, "data") }) });
    try {
      expect(second.app.tokenIds!.mayExist(token)).toBe(true);
      expect((await second.request("HEAD", `/0.1/token/${token}?scope=a.b`)).status).toBe(204);
      expect((await second.request("HEAD", `/0.1/token/${crypto.randomUUID()}?scope=a.b`)).status).toBe(404);
    } finally {
      await second.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
