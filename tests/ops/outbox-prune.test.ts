// Pruning of the event outbox (bus/outbox.ts pruneOutbox, run by the cleanup job: boot/jobs.ts): in
// every configuration old rows go, except those a bus publisher still has to publish. Rows are made old
// by moving their `created_at` back, the way a day passing would.
import { afterAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { tokenFor } from "../helpers/fixtures.ts";
import { until } from "../helpers/wait.ts";
import { runCleanup } from "../../src/boot/jobs.ts";
import { announceListener, withdrawListener } from "../../src/bus/outbox.ts";
import { execRows } from "../../src/db/index.ts";
import { inTransaction } from "../../src/db/tx.ts";
import { publishEvent } from "../../src/services/events.ts";

const uniq = () => crypto.randomUUID().slice(0, 8);

async function record(t: TestApp, name: string, n = 1): Promise<void> {
  await inTransaction(t.app, async (tx) => {
    for (let i = 0; i < n; i++)
      await publishEvent(t.app, tx, { name, routingKey: `test.${name}`, data: { i }, aggregate: `test:${name}` });
  });
}

async function age(t: TestApp, name: string, opts: { published?: boolean } = {}): Promise<void> {
  await t.app.db.execute(
    sql`update tessera_event_outbox set created_at = now() - interval '2 days',
        published_at = ${opts.published ? sql`now() - interval '2 days'` : sql`published_at`} where name = ${name}`,
  );
}

async function count(t: TestApp, name: string): Promise<number> {
  const rows = await execRows<{ n: number }>(
    t.app.db,
    sql`select count(*)::int as n from tessera_event_outbox where name = ${name}`,
  );
  return rows[0]?.n ?? 0;
}

describeEachDb("outbox pruning without a bus", (get) => {
  test("rows older than outbox_retention_seconds are deleted, younger ones kept", async () => {
    const t = get();
    const old = `test_prune_old_${uniq()}`;
    const young = `test_prune_young_${uniq()}`;
    await record(t, old, 3);
    await record(t, young, 2);
    await age(t, old);
    const { outboxEvents } = await runCleanup(t.app);
    expect(outboxEvents).toBeGreaterThanOrEqual(3);
    expect(await count(t, old)).toBe(0);
    expect(await count(t, young)).toBe(2);
  });

  test("unpublished rows stay while a publisher of another instance announced itself", async () => {
    const t = get();
    const name = `test_prune_other_${uniq()}`;
    await record(t, name, 2);
    await age(t, name);
    const other = `other-${uniq()}`;
    await announceListener(t.app, other);
    try {
      await runCleanup(t.app);
      expect(await count(t, name)).toBe(2);
    } finally {
      await withdrawListener(t.app, other);
    }
    await runCleanup(t.app);
    expect(await count(t, name)).toBe(0);
  });
});

// A webhook never reads the outbox after the insert: its trigger copied the event into its own delivery
// in the inserting statement (migration 0034). A receiver that is down keeps its deliveries, not the
// outbox rows: pruning must not lose them.
const hits: Array<{ type: string; n: number }> = [];
let receiverUp = false;
const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    if (!receiverUp) return new Response("down", { status: 503 });
    const body = (await req.json()) as { type: string; data: { i: number } };
    hits.push({ type: body.type, n: body.data.i });
    return new Response(null, { status: 204 });
  },
});
afterAll(() => receiver.stop(true));

describeEachDb(
  "outbox pruning with a lagging webhook",
  (get) => {
    test("the lagging webhook's deliveries survive the pruning and go out when the receiver is back", async () => {
      const t = get();
      const name = `test_prune_hook_${uniq()}`;
      const admin = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
      const r = await t.request("POST", "/0.1/webhooks", {
        token: admin,
        body: { url: `http://127.0.0.1:${receiver.port}/${t.kind}`, events: [name] },
      });
      expect(r.status).toBe(201);
      receiverUp = false;
      await record(t, name, 2);
      // Pending deliveries, and how many attempts failed (one at a time: they go in order per resource).
      const deliveries = async () =>
        (
          await execRows<{ pending: number; tried: number }>(
            t.app.db,
            sql`select count(*)::int as pending, coalesce(sum(attempts), 0)::int as tried
                from tessera_outbound_delivery where owner_key = ${r.json.uuid} and status = 'pending'`,
          )
        )[0] ?? { pending: 0, tried: 0 };
      const pending = async () => (await deliveries()).pending;
      await until(async () => (await deliveries()).tried > 0);
      await age(t, name);
      await runCleanup(t.app);
      expect(await count(t, name)).toBe(0);
      expect(await pending()).toBe(2);
      receiverUp = true;
      await until(() => hits.filter((h) => h.type === name).length === 2);
      expect(
        hits
          .filter((h) => h.type === name)
          .map((h) => h.n)
          .sort(),
      ).toEqual([0, 1]);
    });
  },
  {
    config: {
      outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true, timeout_ms: 2000 },
      outbound_delivery: { retry_initial_seconds: 0.05, retry_max_interval_seconds: 0.3, poll_seconds: 0.2 },
    },
  },
);

// With a bus configured (here a broker nobody listens on: down), what it has not published stays however
// old; what it published goes once old.
describeEachDb(
  "outbox pruning with a bus that is down",
  (get) => {
    test("old unpublished rows are kept, old published rows deleted", async () => {
      const t = get();
      const waiting = `test_prune_waiting_${uniq()}`;
      const sent = `test_prune_sent_${uniq()}`;
      await record(t, waiting, 2);
      await record(t, sent, 2);
      await age(t, waiting);
      await age(t, sent, { published: true });
      await runCleanup(t.app);
      expect(await count(t, waiting)).toBe(2);
      expect(await count(t, sent)).toBe(0);
    });
  },
  { config: { amqp: { uri: "amqp://guest:guest@127.0.0.1:1/", exchange_name: "tessera-prune-test" } } },
);
