// The durable outbound delivery queue (services/outbound/delivery-queue.ts, delivery-worker.ts) against a real
// HTTP receiver started here: delivered after commit only, retried while the receiver is down, in order per
// (owner, ordering key), a hanging owner holding back no other, private targets refused, several workers
// sharing one queue.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { describeEachDb } from "../helpers/app.ts";
import { until } from "../helpers/wait.ts";
import { inTransaction } from "../../src/db/tx.ts";
import { execRows } from "../../src/db/index.ts";
import { enqueueDelivery, registerDeliveryKind, type Delivery } from "../../src/services/outbound/delivery-queue.ts";
import { leaseSeconds, retryDelayMs, startDeliveryWorker } from "../../src/services/outbound/delivery-worker.ts";

interface Received {
  path: string;
  body: string;
  headers: Record<string, string>;
}

/** A receiver whose answer per path the test sets: a status, or "hang" (never answers). */
function receiver() {
  const received: Received[] = [];
  const behaviour = new Map<string, number | "hang">();
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const mode = behaviour.get(path) ?? 200;
      if (mode === "hang") return new Promise<Response>(() => {});
      const body = await req.text();
      if (mode >= 200 && mode < 300) received.push({ path, body, headers: Object.fromEntries(req.headers) });
      return new Response("ok", { status: mode });
    },
  });
  return { server, received, behaviour, url: (path: string) => `http://127.0.0.1:${server.port}${path}` };
}

let rx: ReturnType<typeof receiver>;
const gaveUp: Delivery[] = [];
beforeAll(() => {
  rx = receiver();
  // The test kind: the payload says where to send and what.
  registerDeliveryKind("test", {
    async prepare(payload, ctx) {
      const p = payload as { path: string; n: number; drop?: boolean; url?: string; failFirst?: boolean };
      if (p.drop) return null;
      return {
        // `failFirst`: the first attempt goes to `{path}-fail`, which the test makes answer 503.
        url: p.url ?? rx.url(p.failFirst && ctx.attempt === 1 ? `${p.path}-fail` : p.path),
        headers: { "content-type": "application/json", "x-attempt": String(ctx.attempt), "x-id": ctx.deliveryId },
        body: JSON.stringify({ n: p.n }),
      };
    },
    async onGaveUp(delivery) {
      gaveUp.push(delivery);
    },
  });
});
afterAll(() => rx.server.stop(true));

const config = {
  outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true, timeout_ms: 1500 },
  outbound_delivery: { retry_initial_seconds: 0.05, retry_max_interval_seconds: 0.2, poll_seconds: 0.2 },
};

const bodiesAt = (path: string) => rx.received.filter((r) => r.path === path).map((r) => JSON.parse(r.body).n);

describe("retry delays", () => {
  test("double at each attempt, capped, with jitter in the upper half", () => {
    expect(retryDelayMs(1, 5, 3600, 1)).toBe(5000);
    expect(retryDelayMs(1, 5, 3600, 0)).toBe(2500);
    expect(retryDelayMs(3, 5, 3600, 1)).toBe(20_000);
    expect(retryDelayMs(30, 5, 3600, 1)).toBe(3_600_000);
  });
});

describeEachDb(
  "outbound delivery queue",
  (get) => {
    const enqueue = (
      path: string,
      n: number,
      extra: Record<string, unknown> = {},
      owner = path,
      order: string | null = "r",
    ) =>
      inTransaction(get().app, (tx) =>
        enqueueDelivery(tx, {
          kind: "test",
          ownerKey: owner,
          orderingKey: order,
          payload: { path, n, ...extra },
          tenantUuid: null,
        }),
      );

    const statusOf = async (path: string) =>
      execRows<{ status: string; attempts: number; last_status_code: number | null; last_error: string | null }>(
        get().app.db,
        sql`select status, attempts, last_status_code, last_error from tessera_outbound_delivery
            where payload->>'path' = ${path} order by seq`,
      );

    test("a committed delivery is sent, with the delivery id stable and the attempt counted", async () => {
      const path = `/one-${get().kind}`;
      await enqueue(path, 1);
      await until(() => bodiesAt(path).length === 1);
      const [got] = rx.received.filter((r) => r.path === path);
      expect(got?.headers["x-attempt"]).toBe("1");
      expect(got?.headers["x-id"]).toMatch(/^[0-9a-f-]{36}$/);
      await until(async () => (await statusOf(path))[0]?.status === "delivered");
      const [row] = await statusOf(path);
      expect(row).toMatchObject({ status: "delivered", attempts: 1, last_status_code: 200, last_error: null });
    });

    test("a rolled-back transaction delivers nothing", async () => {
      const path = `/rolled-back-${get().kind}`;
      let failure: unknown = null;
      try {
        await inTransaction(get().app, async (tx) => {
          await enqueueDelivery(tx, {
            kind: "test",
            ownerKey: path,
            orderingKey: null,
            payload: { path, n: 1 },
            tenantUuid: null,
          });
          throw new Error("changed my mind");
        });
      } catch (e) {
        failure = e;
      }
      expect((failure as Error).message).toBe("changed my mind");
      const marker = `/after-rollback-${get().kind}`;
      await enqueue(marker, 2, {}, path);
      await until(() => bodiesAt(marker).length === 1);
      expect(bodiesAt(path)).toEqual([]);
      expect(await statusOf(path)).toEqual([]);
    });

    test("a receiver down then back gets everything, in order, each once", async () => {
      const path = `/flaky-${get().kind}`;
      rx.behaviour.set(path, 503);
      for (let n = 1; n <= 5; n++) await enqueue(path, n);
      await until(async () => ((await statusOf(path))[0]?.attempts ?? 0) >= 3);
      // While the first is retried, the later ones of the same ordering key wait.
      expect((await statusOf(path)).slice(1).every((r) => r.attempts === 0)).toBe(true);
      expect((await statusOf(path))[0]?.last_status_code).toBe(503);
      rx.behaviour.delete(path);
      await until(() => bodiesAt(path).length === 5, 10_000);
      expect(bodiesAt(path)).toEqual([1, 2, 3, 4, 5]);
      await until(async () => (await statusOf(path)).every((r) => r.status === "delivered"));
    });

    test("a hanging receiver holds back no other owner", async () => {
      const slow = `/hang-${get().kind}`;
      const fast = `/fast-${get().kind}`;
      rx.behaviour.set(slow, "hang");
      for (let n = 1; n <= 10; n++) await enqueue(slow, n, {}, slow, null);
      for (let n = 1; n <= 5; n++) await enqueue(fast, n, {}, fast, null);
      await until(() => bodiesAt(fast).length === 5, 5000);
      expect(bodiesAt(slow)).toEqual([]);
      rx.behaviour.delete(slow);
      await until(() => bodiesAt(slow).length === 10, 15_000);
    }, 30_000);

    test("a delivery whose prepare answers null is dropped", async () => {
      const path = `/drop-${get().kind}`;
      await enqueue(path, 1, { drop: true });
      await until(async () => (await statusOf(path))[0]?.status === "dropped");
      expect(bodiesAt(path)).toEqual([]);
    });

    test("a private target the policy does not admit is refused at each attempt, then given up", async () => {
      const path = `/private-${get().kind}`;
      // 10.0.0.1 is not in allow_private_targets: refused before any connection.
      await enqueue(path, 1, { url: "http://10.0.0.1/hook" }, path, null);
      await until(async () => ((await statusOf(path))[0]?.attempts ?? 0) >= 1);
      await until(async () => (await statusOf(path))[0]?.last_error != null);
      expect((await statusOf(path))[0]?.last_error).toContain("private, loopback or link-local");
      await execRows(
        get().app.db,
        sql`update tessera_outbound_delivery set created_at = now() - interval '2 days' where payload->>'path' = ${path}`,
      );
      await until(async () => (await statusOf(path))[0]?.status === "failed", 5000);
      // The row is marked failed first, then the kind is told (onGaveUp): wait for that too.
      await until(() => gaveUp.some((d) => (d.payload as { path: string }).path === path), 5000);
      const failures = async () =>
        (
          await execRows<{ failures: number }>(
            get().app.db,
            sql`select failures from tessera_outbound_owner where owner_key = ${path}`,
          )
        )[0]?.failures ?? 0;
      await until(async () => (await failures()) >= 2);
      expect(await failures()).toBeGreaterThanOrEqual(2);
    });

    test("an instance that dies holding a delivery (kill -9) loses nothing: the lease ends, another sends it", async () => {
      const path = `/orphan-${get().kind}`;
      // Claimed by a worker of another instance (leased for 1 s) that then died without a word.
      await inTransaction(get().app, async (tx) => {
        await enqueueDelivery(tx, {
          kind: "test",
          ownerKey: path,
          orderingKey: null,
          payload: { path, n: 7 },
          tenantUuid: null,
        });
        await execRows(
          tx,
          sql`update tessera_outbound_delivery set claimed_by = 'dead-instance', attempts = 1,
                claimed_until = now() + interval '1 second' where payload->>'path' = ${path}`,
        );
      });
      expect(bodiesAt(path)).toEqual([]);
      await until(() => bodiesAt(path).length === 1, 10_000);
      expect(bodiesAt(path)).toEqual([7]);
      await until(async () => (await statusOf(path))[0]?.status === "delivered");
    });

    test("a hanging delivery holds back none of the same owner's other resources (slots refilled)", async () => {
      const stuck = `/stuck-${get().kind}`;
      const others = `/others-${get().kind}`;
      const owner = `owner-stuck-${get().kind}`;
      rx.behaviour.set(stuck, "hang");
      await enqueue(stuck, 0, {}, owner, "stuck-resource");
      // Twice per_owner_concurrency (4): they go out through the 3 slots the hanging call leaves, refilled as
      // each ends, not after the whole claimed batch (the hanging call included) has ended.
      for (let n = 1; n <= 8; n++) await enqueue(others, n, {}, owner, `resource-${n}`);
      await until(() => bodiesAt(others).length === 8, 10_000);
      // Still the first attempt of the hanging call, in flight (a timeout would have recorded an error).
      const [row] = await statusOf(stuck);
      expect(row).toMatchObject({ status: "pending", attempts: 1, last_error: null });
      rx.behaviour.delete(stuck);
      await until(() => bodiesAt(stuck).length === 1, 15_000);
    }, 30_000);

    test("a claim is leased for 1.5 × outbound_http.timeout_ms + 5 s (8 s for 1,500 ms)", async () => {
      expect(leaseSeconds(10_000)).toBe(20);
      const path = `/leased-${get().kind}`;
      rx.behaviour.set(path, "hang");
      await enqueue(path, 1, {}, path, null);
      const lease = async () =>
        (
          await execRows<{ lease: number | null }>(
            get().app.db,
            sql`select extract(epoch from claimed_until - last_attempt_at)::float8 as lease
                from tessera_outbound_delivery where payload->>'path' = ${path}`,
          )
        )[0]?.lease ?? null;
      await until(async () => (await lease()) !== null);
      expect(await lease()).toBe(8);
      rx.behaviour.delete(path);
      await until(() => bodiesAt(path).length === 1, 15_000);
    }, 30_000);

    test("two workers keep each resource's order, retries included, each delivered once", async () => {
      const second = await startDeliveryWorker(get().app);
      const path = `/ordered-${get().kind}`;
      const owner = `owner-ordered-${get().kind}`;
      rx.behaviour.set(`${path}-fail`, 503);
      // Three resources, interleaved; every third delivery fails its first attempt (it is retried while the
      // later ones of its resource wait).
      for (let n = 1; n <= 24; n++) await enqueue(path, n, { failFirst: n % 3 === 0 }, owner, `resource-${n % 3}`);
      await until(() => bodiesAt(path).length >= 24, 20_000);
      await until(async () => (await statusOf(path)).every((r) => r.status === "delivered"));
      const got = bodiesAt(path);
      expect([...got].sort((a, b) => a - b)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
      for (const resource of [0, 1, 2]) {
        const order = got.filter((n) => n % 3 === resource);
        expect(order).toEqual([...order].sort((a, b) => a - b));
      }
      await second.stop();
    }, 40_000);

    test("two workers on one queue deliver each once", async () => {
      const second = await startDeliveryWorker(get().app);
      const path = `/shared-${get().kind}`;
      for (let n = 1; n <= 20; n++) await enqueue(path, n, {}, `${path}-${n % 4}`, null);
      await until(() => bodiesAt(path).length >= 20, 10_000);
      await until(async () => (await statusOf(path)).every((r) => r.status === "delivered"));
      expect(bodiesAt(path).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      await second.stop();
    });
  },
  { config },
);

describeEachDb(
  "outbound delivery queue: names resolving to private addresses",
  (get) => {
    test("a name resolving to 10.0.0.1 (or to a public and a private address) is refused at delivery", async () => {
      const t = get();
      // This app starts no services: the only worker is this one, with its own resolver.
      const names: Record<string, string[]> = {
        "hooks.internal.example": ["10.0.0.1"],
        "mixed.example": ["93.184.216.34", "169.254.169.254"],
      };
      const worker = await startDeliveryWorker(t.app, async (host) => names[host] ?? []);
      const paths = ["/internal", "/mixed"];
      await inTransaction(t.app, async (tx) => {
        for (const [i, host] of ["hooks.internal.example", "mixed.example"].entries())
          await enqueueDelivery(tx, {
            kind: "test",
            ownerKey: `ssrf-${i}`,
            orderingKey: null,
            payload: { path: paths[i], n: i, url: `http://${host}/hook` },
            tenantUuid: null,
          });
      });
      const errors = async () =>
        (
          await execRows<{ last_error: string | null }>(
            t.app.db,
            sql`select last_error from tessera_outbound_delivery where owner_key like 'ssrf-%' order by owner_key`,
          )
        ).map((r) => r.last_error);
      await until(async () => (await errors()).every((e) => e !== null));
      for (const e of await errors()) expect(e).toContain("resolves to a private, loopback or link-local address");
      await worker.stop();
    });
  },
  { config, services: false },
);
