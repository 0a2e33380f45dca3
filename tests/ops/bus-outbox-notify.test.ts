// The outbox's NOTIFY is sent only while a bus publisher says it listens (migration 0027): a
// notifying commit holds PostgreSQL's notification lock until its WAL flush, so without a publisher
// every event-writing commit (a login, a client credentials grant) waited for the previous one's.
// Notifications reach a session in commit order, so a probe notified after the write tells whether
// the write notified: it would have arrived first.
import { expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { announceListener, withdrawListener } from "../../src/bus/outbox.ts";
import { outboxListeners } from "../../src/db/schema.ts";
import { publishEvent } from "../../src/services/events.ts";
import { describeEachDb } from "../helpers/app.ts";

describeEachDb("outbox NOTIFY only while a publisher listens", (get) => {
  test("no publisher (or a forgotten one): no notice; an announced publisher: a notice; withdrawn: none", async () => {
    const { app } = get();
    const heard: string[] = [];
    const probe = `tessera_probe_${process.pid}`;
    const unlisten = [
      await app.database.listen("tessera_outbox", () => heard.push("outbox")),
      await app.database.listen(probe, () => heard.push("probe")),
    ];
    const writeNotifies = async () => {
      heard.length = 0;
      await publishEvent(app, app.db, { name: "probe_event", routingKey: "probe", data: {}, aggregate: "probe" });
      await app.db.execute(sql`select pg_notify(${probe}, '')`);
      const started = Date.now();
      while (!heard.includes("probe")) {
        if (Date.now() - started > 5000) throw new Error("the probe's notice never came");
        await Bun.sleep(2);
      }
      return heard.includes("outbox");
    };
    try {
      expect(await writeNotifies()).toBe(false);
      await announceListener(app, "publisher-a");
      expect(await writeNotifies()).toBe(true);
      await announceListener(app, "publisher-a"); // the minute's renewal: one row still
      expect((await app.db.select().from(outboxListeners)).length).toBe(1);
      await withdrawListener(app, "publisher-a");
      expect(await writeNotifies()).toBe(false);
      // A crashed instance's row, not renewed for more than two minutes, notifies nothing.
      await app.db.insert(outboxListeners).values({ instanceId: "crashed", seenAt: new Date(Date.now() - 180_000) });
      expect(await writeNotifies()).toBe(false);
    } finally {
      for (const u of unlisten) await u();
    }
  });
});
