// Events delivered to the real RabbitMQ through the outbox.
import { afterAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { openDatabase } from "../../src/db/index.ts";
import { parseConfig } from "../../src/config/config.ts";
import { silentLogger } from "../../src/observe/log.ts";
import { buildContext, closeContext } from "../../src/services/app-context.ts";
import { publishEvent, routingKey } from "../../src/services/events.ts";
import { startServices } from "../../src/boot/startup.ts";
import { createTestApp, currentDatabaseUrl, describeEachDb } from "../helpers/app.ts";
import { AMQP_URL, amqpAvailable, brokerProxy, consume } from "../helpers/amqp.ts";
import { createUserRow, tokenFor } from "../helpers/fixtures.ts";

const run = crypto.randomUUID().slice(0, 8);
const proxy = brokerProxy();
afterAll(() => proxy.close());

test("routing keys escape dots, hashes and stars", () => {
  expect(routingKey("auth.users.{u}.tokens.{c}.created", { u: "u1", c: "a.b#c*d" })).toBe(
    "auth.users.u1.tokens.a__DOT__b__HASH__c__STAR__d.created",
  );
});

describeEachDb(
  "bus delivery",
  (get) => {
    test("session and tenant events arrive with routing key, headers and body", async () => {
      const t = get();
      const consumer = await consume(t.app.config.amqp!.exchange_name);
      try {
        await createUserRow(t.app, { username: "bususer", password: "pw" });
        const login = await t.request("POST", "/0.1/token", {
          body: {},
          headers: { Authorization: `Basic ${btoa("bususer:pw")}` },
        });
        const { token, session_uuid, auth_id } = login.json.data;
        await t.request("DELETE", `/0.1/token/${token}`);
        const admin = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
        const tenant = (await t.request("POST", "/0.1/tenants", { token: admin, body: { name: "bus" } })).json;
        const got = await consumer.waitFor(
          (m) =>
            m.some((x) => x.body.name === "auth_tenant_added" && x.body.data.uuid === tenant.uuid) &&
            m.some((x) => x.routingKey === `auth.sessions.${session_uuid}.deleted`),
        );
        const created = got.find((m) => m.routingKey === `auth.sessions.${session_uuid}.created`)!;
        expect(created.headers).toMatchObject({
          name: "auth_session_created",
          tenant_uuid: t.app.topTenantUuid,
          [`user_uuid:${auth_id}`]: true,
          required_access: "event.auth_session_created",
          required_acl: `events.auth.sessions.${session_uuid}.created`,
          session_uuid,
        });
        expect(typeof created.headers.timestamp).toBe("string");
        expect("origin_uuid" in created.headers).toBe(true);
        expect(created.body.data).toEqual({
          uuid: session_uuid,
          tenant_uuid: t.app.topTenantUuid,
          user_uuid: auth_id,
          mobile: false,
        });
        expect(created.body.name).toBe("auth_session_created");
        const tenantAdded = got.find((m) => m.body.name === "auth_tenant_added")!;
        expect(tenantAdded.routingKey).toBe(`auth.tenants.${tenant.uuid}.created`);
        expect(tenantAdded.headers["user_uuid:*"]).toBe(true);
        // everything published, nothing left behind
        const status = await t.request("GET", "/0.1/status", { token: admin });
        expect(status.json.bus_publisher).toMatchObject({ status: "ok", exchange: t.app.config.amqp!.exchange_name });
      } finally {
        await consumer.close();
      }
    });
  },
  {
    skip: !amqpAvailable,
    config: { amqp: { uri: AMQP_URL, exchange_name: `tessera-test-${run}-a`, exchange_type: "topic" } },
  },
);

describeEachDb(
  "bus outage",
  (get) => {
    test("events recorded while the broker is unreachable all arrive, in order, once it is back", async () => {
      const t = get();
      const consumer = await consume(t.app.config.amqp!.exchange_name);
      try {
        const emit = (i: number) =>
          publishEvent(t.app, t.app.db, {
            name: "test_event",
            routingKey: `test.outage.${i}`,
            data: { i },
            aggregate: "outage",
          });
        await emit(0);
        await consumer.waitFor((m) => m.length === 1);
        proxy.cut();
        await Bun.sleep(300);
        for (let i = 1; i <= 20; i++) await emit(i); // requests never fail while the broker is away
        const admin = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
        const during = await t.request("GET", "/0.1/status", { token: admin });
        expect(during.json.bus_publisher.status).toBe("fail");
        expect(during.json.bus_publisher.outbox_backlog).toBeGreaterThanOrEqual(20);
        proxy.restore();
        const got = await consumer.waitFor((m) => m.length >= 21, 40_000);
        const order = got.map((m) => m.body.data.i as number);
        expect(order.filter((v, i) => order.indexOf(v) === i)).toEqual([...Array(21).keys()]);
      } finally {
        await consumer.close();
      }
    }, 60_000);
  },
  {
    skip: !amqpAvailable,
    config: { amqp: { uri: proxy.url, exchange_name: `tessera-test-${run}-b`, exchange_type: "topic" } },
  },
);

const frozenProxy = brokerProxy();
afterAll(() => frozenProxy.close());

describeEachDb(
  "a frozen broker",
  (get) => {
    test("/status says degraded once the oldest unpublished event is older than amqp.degraded_after_seconds", async () => {
      const t = get();
      const admin = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
      const status = async () => (await t.request("GET", "/0.1/status", { token: admin })).json.bus_publisher;
      const emit = () =>
        publishEvent(t.app, t.app.db, { name: "test_event", routingKey: "test.frozen", data: {}, aggregate: "frozen" });
      await emit();
      for (let i = 0; i < 100 && (await status()).outbox_backlog > 0; i++) await Bun.sleep(50);
      expect(await status()).toMatchObject({ status: "ok", outbox_backlog: 0 });
      frozenProxy.freeze(); // connected, but nothing answers: no publisher confirm comes
      try {
        await emit();
        await Bun.sleep(1500);
        const during = await status();
        expect(during).toMatchObject({ status: "degraded", outbox_backlog: 1 });
        expect(during.oldest_pending_seconds).toBeGreaterThanOrEqual(1);
      } finally {
        frozenProxy.restore();
      }
      for (let i = 0; i < 300 && (await status()).status !== "ok"; i++) await Bun.sleep(50);
      expect(await status()).toMatchObject({ status: "ok", outbox_backlog: 0 });
    }, 60_000);
  },
  {
    skip: !amqpAvailable,
    config: {
      amqp: {
        uri: frozenProxy.url,
        exchange_name: `tessera-test-${run}-f`,
        exchange_type: "topic",
        degraded_after_seconds: 1,
      },
    },
  },
);

describe.skipIf(!process.env.TEST_DATABASE_URL || !amqpAvailable)("two instances on one PostgreSQL [postgres]", () => {
  test("each event is delivered once", async () => {
    const exchange = `tessera-test-${run}-c`;
    const amqp = { uri: AMQP_URL, exchange_name: exchange, exchange_type: "topic" };
    const first = await createTestApp("postgres", { config: { amqp } });
    const consumer = await consume(exchange);
    const dbUrl = await currentDatabaseUrl(first.app);
    const secondDb = await openDatabase({ url: dbUrl, poolSize: 3 });
    const second = await buildContext(parseConfig({ amqp, token_cleanup_interval: 0 }), secondDb, silentLogger);
    await startServices(second);
    try {
      for (let i = 0; i < 200; i++) {
        await publishEvent(i % 2 ? first.app : second, (i % 2 ? first.app : second).db, {
          name: "dup_check",
          routingKey: `test.dup.${i}`,
          data: { i },
          aggregate: `a${i % 7}`,
        });
      }
      const got = await consumer.waitFor((m) => m.length >= 200, 40_000);
      await Bun.sleep(1000);
      expect(got.length).toBe(200);
      expect(new Set(got.map((m) => m.body.data.i)).size).toBe(200);
      for (let a = 0; a < 7; a++) {
        const seq = got.map((m) => m.body.data.i as number).filter((i) => i % 7 === a);
        expect(seq).toEqual([...seq].sort((x, y) => x - y));
      }
    } finally {
      await consumer.close();
      await closeContext(second);
      await first.close();
    }
  }, 90_000);
});

describeEachDb("bus disabled", (get) => {
  test("without an amqp section events are recorded and /status says the bus is disabled", async () => {
    const t = get();
    const admin = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
    const r = await t.request("GET", "/0.1/status", { token: admin });
    expect(r.json.bus_publisher.status).toBe("disabled");
    await t.request("POST", "/0.1/tenants", { token: admin, body: { name: "quiet" } });
    const again = await t.request("GET", "/0.1/status", { token: admin });
    expect(again.json.bus_publisher.outbox_backlog).toBeGreaterThan(r.json.bus_publisher.outbox_backlog);
  });
});
