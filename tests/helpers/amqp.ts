// A consumer bound to an exchange of the real RabbitMQ, and a TCP proxy in front of it that a test
// can cut and restore to simulate a broker outage.
import amqp from "amqplib";
import { tcpProxy, type TcpProxy } from "./tcp-proxy.ts";

export const AMQP_URL = process.env.TEST_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672/";

/**
 * Whether the bus suites run: always when TEST_AMQP_URL is set (CI sets it; an unreachable broker
 * then fails them), else only when a broker answers on the default address, so that `npm test` on
 * a machine without RabbitMQ still runs everything else.
 */
export const amqpAvailable: boolean =
  process.env.TEST_AMQP_URL !== undefined ||
  (await amqp
    .connect(AMQP_URL)
    .then(async (c) => {
      await c.close();
      return true;
    })
    .catch(() => {
      console.warn(
        `RabbitMQ is not reachable at ${AMQP_URL}: the bus tests are skipped (set TEST_AMQP_URL to require them)`,
      );
      return false;
    }));

export interface Received {
  routingKey: string;
  headers: Record<string, unknown>;
  body: Record<string, unknown> & { data: Record<string, unknown> };
}

export interface Consumer {
  messages: Received[];
  waitFor(predicate: (m: Received[]) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function consume(exchange: string, bindingKey = "#"): Promise<Consumer> {
  const connection = await amqp.connect(AMQP_URL);
  const channel = await connection.createChannel();
  await channel.assertExchange(exchange, "topic", { durable: true });
  const { queue } = await channel.assertQueue("", { exclusive: true, autoDelete: true });
  await channel.bindQueue(queue, exchange, bindingKey);
  const messages: Received[] = [];
  await channel.consume(queue, (msg) => {
    if (!msg) return;
    messages.push({
      routingKey: msg.fields.routingKey,
      headers: (msg.properties.headers ?? {}) as Record<string, unknown>,
      body: JSON.parse(msg.content.toString()),
    });
    channel.ack(msg);
  });
  return {
    messages,
    async waitFor(predicate, timeoutMs = 15_000) {
      const until = Date.now() + timeoutMs;
      while (!predicate(messages)) {
        if (Date.now() > until)
          throw new Error(`timed out; received ${messages.length}: ${messages.map((m) => m.routingKey).join(", ")}`);
        await Bun.sleep(50);
      }
      return messages;
    },
    async close() {
      await channel.close().catch(() => {});
      await connection.close().catch(() => {});
    },
  };
}

/** A loopback TCP proxy to RabbitMQ (see tcp-proxy.ts): cut, freeze and restore the broker's link. */
export function brokerProxy(): TcpProxy & { url: string } {
  const target = new URL(AMQP_URL);
  const proxy = tcpProxy(target.hostname, Number(target.port || 5672));
  return Object.assign(proxy, {
    url: `amqp://${target.username}:${target.password}@127.0.0.1:${proxy.port}${target.pathname}`,
  });
}
