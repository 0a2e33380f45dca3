// db/bound-inserts.ts: several inserts as one statement whose text is built once per shape; every
// call's own values are bound (never the first call's), through each column's encoder, and an
// omitted or undefined value takes the column's default.
import { expect, test } from "bun:test";
import { eq, inArray, sql } from "drizzle-orm";
import { boundShapes, boundStatements, runInserts, runInsertsCoalesced } from "../../src/db/bound-inserts.ts";
import { eventOutbox, sessions, tokens } from "../../src/db/schema.ts";
import { describeEachDb } from "../helpers/app.ts";

describeEachDb("bound inserts", (get) => {
  const session = (tenantUuid: string, mobile?: boolean) => ({
    table: sessions,
    row: { uuid: crypto.randomUUID(), tenantUuid, mobile },
  });
  const token = (sessionUuid: string, acl: string[]) => ({
    table: tokens,
    row: {
      uuid: crypto.randomUUID(),
      authId: "bound-test",
      pbxUserUuid: undefined,
      issuedT: 1,
      expireT: 2,
      acl,
      sessionUuid,
      metadata: JSON.stringify({ n: acl.length }),
    },
  });

  const tokensOf = (uuids: string[]) => get().app.db.select().from(tokens).where(inArray(tokens.uuid, uuids));

  test("each call writes its own values with one statement text per shape", async () => {
    const t = get();
    const tenant = t.app.topTenantUuid;
    const before = boundShapes();
    const written: Array<{ session: string; token: string; acl: string[] }> = [];
    for (const acl of [["a.b"], ["c.d", "e.#"], []]) {
      const s = session(tenant, acl.length === 2);
      const k = token(s.row.uuid, acl);
      await runInserts(t.app.db, [s, k]); // a token referencing the session inserted beside it
      written.push({ session: s.row.uuid, token: k.row.uuid, acl });
    }
    // The second mobile value is true, the others false or undefined (the column's default: false).
    const shapesAfterThree = boundShapes();
    expect(shapesAfterThree - before).toBeLessThanOrEqual(2); // mobile given (2 calls) / omitted (1)
    const rows = await tokensOf(written.map((w) => w.token));
    expect(rows).toHaveLength(3);
    for (const w of written) {
      const row = rows.find((r) => r.uuid === w.token)!;
      expect(row.sessionUuid).toBe(w.session);
      expect(row.acl).toEqual(w.acl); // text[] through its column's encoder
      expect(row.pbxUserUuid).toBeNull(); // undefined: the column's default
      expect(JSON.parse(row.metadata!)).toEqual({ n: w.acl.length });
    }
    const mobiles = await t.app.db
      .select({ uuid: sessions.uuid, mobile: sessions.mobile })
      .from(sessions)
      .where(
        inArray(
          sessions.uuid,
          written.map((w) => w.session),
        ),
      );
    expect(mobiles.map((m) => m.mobile).sort()).toEqual([false, false, true]);
    // The same shape again builds nothing new.
    const s = session(tenant, false);
    await runInserts(t.app.db, [s, token(s.row.uuid, ["x"])]);
    expect(boundShapes()).toBe(shapesAfterThree);
  });

  test("jsonb values and a lone insert; a failing statement writes none of its rows", async () => {
    const t = get();
    const aggregate = `bound-${crypto.randomUUID()}`;
    const headers = { name: "bound_test", nested: { list: [1, "two"] } };
    await runInserts(t.app.db, [
      {
        table: eventOutbox,
        row: { name: "bound_test", routingKey: "bound.test", headers, payload: headers, aggregate },
      },
    ]);
    const [event] = await t.app.db.select().from(eventOutbox).where(eq(eventOutbox.aggregate, aggregate));
    expect(event!.headers).toEqual(headers);
    // A null stays SQL NULL (a jsonb column's encoder would make it JSON null, a timestamp's throw);
    // a Date goes through its column's encoder.
    const dated = `bound-${crypto.randomUUID()}`;
    const claimedUntil = new Date("2030-01-02T03:04:05.678Z");
    for (const publishedAt of [null, new Date("2030-01-01T00:00:00.000Z")])
      await runInserts(t.app.db, [
        {
          table: eventOutbox,
          row: { name: "x", routingKey: "x", headers, payload: headers, aggregate: dated, claimedUntil, publishedAt },
        },
      ]);
    const rows = await t.app.db.select().from(eventOutbox).where(eq(eventOutbox.aggregate, dated));
    expect(rows.map((r) => r.claimedUntil?.toISOString())).toEqual([
      claimedUntil.toISOString(),
      claimedUntil.toISOString(),
    ]);
    expect(rows.map((r) => r.publishedAt?.toISOString() ?? null).sort()).toEqual(
      [null, "2030-01-01T00:00:00.000Z"].sort(),
    );
    // An SQL expression among the values: drizzle's own path, the same rows.
    const expressed = `bound-${crypto.randomUUID()}`;
    await runInserts(t.app.db, [
      {
        table: eventOutbox,
        row: { name: "x", routingKey: "x", headers, payload: headers, aggregate: expressed, claimedUntil: sql`now()` },
      },
    ]);
    const [expr] = await t.app.db.select().from(eventOutbox).where(eq(eventOutbox.aggregate, expressed));
    expect(expr!.claimedUntil).toBeInstanceOf(Date);
    // A token whose session does not exist: the statement fails whole, its session-less sibling too.
    const orphanEvent = `bound-${crypto.randomUUID()}`;
    const failed = await runInserts(t.app.db, [
      { table: eventOutbox, row: { name: "x", routingKey: "x", headers: {}, payload: {}, aggregate: orphanEvent } },
      token(crypto.randomUUID(), []),
    ]).then(
      () => null,
      (e: Error) => e,
    );
    expect(failed).toBeInstanceOf(Error);
    expect(await t.app.db.select().from(eventOutbox).where(eq(eventOutbox.aggregate, orphanEvent))).toHaveLength(0);
  });

  test("concurrent writes of one shape share a statement; a failing set fails alone", async () => {
    const t = get();
    const tenant = t.app.topTenantUuid;
    const sets = Array.from({ length: 6 }, (_, n) => {
      const s = session(tenant, n % 2 === 0);
      return { s, k: token(s.row.uuid, [`acl.${n}`]) };
    });
    const before = boundStatements();
    await Promise.all(sets.map(({ s, k }) => runInsertsCoalesced(t.app.db, [s, k], 32)));
    expect(boundStatements() - before).toBe(1); // one statement, one round trip, one commit for the six
    // At most `maxSets` sets per statement: five sets, two at most, three statements.
    const small = Array.from({ length: 5 }, () => session(tenant));
    const split = boundStatements();
    await Promise.all(small.map((s) => runInsertsCoalesced(t.app.db, [s], 2)));
    expect(boundStatements() - split).toBe(3);
    const rows = await tokensOf(sets.map(({ k }) => k.row.uuid));
    expect(rows).toHaveLength(6);
    for (const { s, k } of sets) {
      const row = rows.find((r) => r.uuid === k.row.uuid)!;
      expect(row.sessionUuid).toBe(s.row.uuid); // each set's own values, not another's
      expect(row.acl).toEqual(k.row.acl);
    }
    // A set whose token has no session, among good ones: it alone fails; the others are written.
    const good = [0, 1].map(() => {
      const s = session(tenant);
      return { s, k: token(s.row.uuid, ["ok"]) };
    });
    const orphan = session(tenant);
    const outcomes = await Promise.allSettled([
      runInsertsCoalesced(t.app.db, [good[0]!.s, good[0]!.k], 32),
      runInsertsCoalesced(t.app.db, [orphan, token(crypto.randomUUID(), ["bad"])], 32),
      runInsertsCoalesced(t.app.db, [good[1]!.s, good[1]!.k], 32),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    const kept = await t.app.db
      .select({ uuid: sessions.uuid })
      .from(sessions)
      .where(inArray(sessions.uuid, [good[0]!.s.row.uuid, good[1]!.s.row.uuid, orphan.row.uuid]));
    expect(kept.map((r) => r.uuid).sort()).toEqual([good[0]!.s.row.uuid, good[1]!.s.row.uuid].sort());
  });
});
