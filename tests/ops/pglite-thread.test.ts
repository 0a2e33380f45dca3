// The embedded database on its own thread (src/db/pglite-client.ts): what crosses the thread must
// behave as PGlite in-process did — transactions commit or roll back as a whole and other statements
// wait for them, errors keep their SQLSTATE and fields, a NOTIFY arrives before the answer of the
// statement that committed it, drizzle's text-kept types stay text — and a thread that dies fails
// every waiting and later statement as "database unavailable" (503), never a hang.
import { afterEach, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/pglite";
import { PgliteThreadClient } from "../../src/db/pglite-client.ts";
import { databaseFailure } from "../../src/db/failures.ts";
import { openDatabase } from "../../src/db/index.ts";
import { createTestApp, pgliteDump } from "../helpers/app.ts";

const opened: PgliteThreadClient[] = [];
/** A thread on a copy of the migrated template: a bare `memory://` would run initdb (~2 s) each time. */
const fresh = async () => PgliteThreadClient.open("memory://", { template: await pgliteDump() });
async function client(): Promise<PgliteThreadClient> {
  const c = await fresh();
  opened.push(c);
  await c.query("create table t (id int primary key, at timestamp)");
  return c;
}
afterEach(async () => {
  for (const c of opened.splice(0)) await c.close();
});

test("closing the database on purpose is not losing it", async () => {
  const c = await fresh();
  const lost: string[] = [];
  c.onLost((reason) => lost.push(reason));
  await c.close();
  await Bun.sleep(50);
  expect(lost).toEqual([]);
  expect(((await c.query("select 1").catch((e) => e)) as Error).message).toBe("PGlite is closed");
});

test("a thread closed cleanly opens the next database, which sees nothing of the one before", async () => {
  const threadOf = (c: PgliteThreadClient) => (c as unknown as { thread: Worker }).thread;
  const first = await client();
  await first.query("insert into t (id) values (1)");
  const heardFirst: string[] = [];
  await first.listen("chan", (payload) => heardFirst.push(payload));
  const thread = threadOf(first);
  await first.close();
  opened.splice(opened.indexOf(first), 1);

  const next = await fresh(); // kept threads are taken last in, first out: this one
  opened.push(next);
  expect(threadOf(next)).toBe(thread);
  expect((await next.query<{ t: string | null }>("select to_regclass('public.t')::text as t")).rows[0]?.t).toBeNull();
  const heardNext: string[] = [];
  await next.listen("chan", (payload) => heardNext.push(payload));
  await next.query("select pg_notify('chan', 'hello')");
  expect(heardNext).toEqual(["hello"]);
  expect(heardFirst).toEqual([]);

  // A thread that did not close cleanly (it died) is never kept.
  const doomed = await fresh();
  const lost = new Promise((resolve) => doomed.onLost(resolve));
  threadOf(doomed).terminate();
  await lost; // the thread's close event has come: close() is then a no-op
  await doomed.close();
  const after = await fresh();
  opened.push(after);
  expect(threadOf(after)).not.toBe(threadOf(doomed));
  expect((await after.query<{ one: number }>("select 1 as one")).rows).toEqual([{ one: 1 }]);
});

const ids = async (c: PgliteThreadClient) =>
  (await c.query<{ id: number }>("select id from t order by id")).rows.map((r) => r.id);

test("a transaction commits when its work resolves and rolls back, whole, when it throws", async () => {
  const c = await client();
  expect(
    await c.transaction(async (tx) => {
      await tx.query("insert into t (id) values (1)");
      await tx.query("insert into t (id) values (2)");
      return "done";
    }),
  ).toBe("done");
  const failure = await c
    .transaction(async (tx) => {
      await tx.query("insert into t (id) values (3)");
      throw new Error("changed my mind");
    })
    .catch((e: Error) => e.message); // (bun's `expect().rejects` does not wait for the thread's answer)
  expect(failure).toBe("changed my mind");
  expect(await ids(c)).toEqual([1, 2]);
});

test("a statement outside a transaction waits until it ends (one connection, as in PGlite)", async () => {
  const c = await client();
  const order: string[] = [];
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let begun!: () => void;
  const inside = new Promise<void>((r) => (begun = r));
  const tx = c.transaction(async (t) => {
    await t.query("insert into t (id) values (10)");
    begun();
    await held;
    order.push("commit");
  });
  await inside; // the transaction has begun and written
  const outside = c.query<{ n: number }>("select count(*)::int as n from t").then((r) => {
    order.push("outside");
    return r.rows[0]!.n;
  });
  await Bun.sleep(50);
  expect(order).toEqual([]); // still waiting for the transaction
  release();
  await tx;
  expect(await outside).toBe(1); // it saw the committed row
  expect(order).toEqual(["commit", "outside"]);
});

test("errors keep their SQLSTATE and fields; a statement after a failed one still works", async () => {
  const c = await client();
  await c.query("insert into t (id) values (1)");
  const e = (await c.query("insert into t (id) values (1)").catch((x) => x)) as Error & Record<string, unknown>;
  expect(e).toBeInstanceOf(Error);
  expect([e.code, e.constraint, e.table]).toEqual(["23505", "t_pkey", "t"]);
  expect(databaseFailure(e)).toBeNull(); // a conflict, not an outage
  const uncopyable = (await c.query("select $1::text", [() => "a function"]).catch((x) => x)) as Error;
  expect(uncopyable.name).toBe("DataCloneError"); // refused at once, nothing left waiting
  expect(await ids(c)).toEqual([1]);
});

test("a NOTIFY reaches the listener before the answer of the statement that committed it", async () => {
  const c = await client();
  const heard: string[] = [];
  const stop = await c.listen("chan", (payload) => heard.push(payload));
  await c.query("select pg_notify('chan', 'one')");
  expect(heard).toEqual(["one"]);
  await c.transaction(async (tx) => {
    await tx.query("select pg_notify('chan', 'two')");
    expect(heard).toEqual(["one"]); // not before the commit
  });
  expect(heard).toEqual(["one", "two"]);
  await stop();
  await c.query("select pg_notify('chan', 'three')");
  expect(heard).toEqual(["one", "two"]);
});

test("drizzle through the thread: timestamps stay text; parameters, arrays and bytes cross", async () => {
  const c = await client();
  const db = drizzle(c as never);
  await db.execute(sql`insert into t (id, at) values (${7}, ${"2026-11-23 10:00:00"})`);
  expect((await db.execute(sql`select id, at from t`)).rows).toEqual([{ id: 7, at: "2026-11-23 10:00:00" }]);
  const row = (
    await c.query<Record<string, unknown>>("select $1::int[] as list, $2::bytea as bytes, $3::jsonb as doc", [
      [1, 2, 3],
      new Uint8Array([0, 255]),
      JSON.stringify({ a: [1] }),
    ])
  ).rows[0];
  expect(row).toEqual({ list: [1, 2, 3], bytes: new Uint8Array([0, 255]), doc: { a: [1] } });
});

test("a thread that dies fails what waits and what follows as the database being unavailable: 503, no hang", async () => {
  const t = await createTestApp("pglite");
  const lost: string[] = [];
  t.app.database.onLost((reason) => lost.push(reason)); // the server exits on it (src/main.ts)
  try {
    const thread = (t.app.db as unknown as { $client: { thread: Worker } }).$client.thread;
    const waiting = t.app.db.execute(sql`select pg_sleep(2)`);
    thread.terminate();
    const e = await waiting.catch((x) => x);
    expect(databaseFailure(e)?.message).toContain("PGlite is closed");
    const res = await t.request("POST", "/0.1/token", {
      headers: { Authorization: `Basic ${btoa("nobody:secret")}` },
      body: {},
    });
    expect(res.status).toBe(503);
    expect((res.json as { error_id: string }).error_id).toBe("service-unavailable");
    expect(lost).toEqual(["PGlite is closed: its thread stopped"]);
  } finally {
    await t.close();
  }
});

test("a thread that stops answering is lost once a heartbeat goes unanswered past the watchdog's deadline", async () => {
  const database = await openDatabase({ dataDir: "memory://", template: await pgliteDump(), watchdogSeconds: 1 });
  const lost: string[] = [];
  database.onLost((reason) => lost.push(reason)); // the server exits 1 on it (src/main.ts)
  try {
    await Bun.sleep(2000);
    expect(lost).toEqual([]); // an idle, healthy thread answers its heartbeats
    // A statement that holds the engine (as a hung one would) for longer than the deadline.
    const hung = database.db.execute(sql`select pg_sleep(5)`).catch((e) => e);
    const started = performance.now();
    while (lost.length === 0 && performance.now() - started < 4000) await Bun.sleep(20);
    const detectedMs = performance.now() - started;
    console.log(`hung PGlite thread detected after ${detectedMs.toFixed(0)} ms (deadline 1 s)`);
    expect(lost).toEqual(["PGlite is closed: its thread stopped answering (no heartbeat answer within 1 s)"]);
    expect(detectedMs).toBeLessThan(2500);
    expect(databaseFailure(await hung)?.message).toContain("PGlite is closed");
    expect(databaseFailure(await database.db.execute(sql`select 1`).catch((e) => e))?.message).toContain(
      "PGlite is closed",
    );
  } finally {
    await database.close();
  }
});
