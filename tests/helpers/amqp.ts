// A consumer bound to an exchange of the real RabbitMQ, and a TCP proxy in front of it that a test
// can cut and restore to simulate a broker outage.
import amqp from "amqplib";

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
      console.warn(`RabbitMQ is not reachable at ${AMQP_URL}: the bus tests are skipped (set TEST_AMQP_URL to require them)`);
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
    messages.push({ routingKey: msg.fields.routingKey, headers: (msg.properties.headers ?? {}) as Record<string, unknown>, body: JSON.parse(msg.content.toString()) });
    channel.ack(msg);
  });
  return {
    messages,
    async waitFor(predicate, timeoutMs = 15_000) {
      const until = Date.now() + timeoutMs;
      while (!predicate(messages)) {
        if (Date.now() > until) throw new Error(`timed out; received ${messages.length}: ${messages.map((m) => m.routingKey).join(", ")}`);
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

/**
 * A loopback TCP proxy to RabbitMQ: `cut()` drops every connection and refuses new ones; `freeze()`
 * keeps connections open but forwards nothing (a broker that stopped answering); `restore()` accepts
 * and forwards again.
 */
export function brokerProxy(): { url: string; cut(): void; freeze(): void; restore(): void; close(): void } {
  const target = new URL(AMQP_URL);
  let open = true;
  let frozen = false;
  /** What arrived while frozen, delivered on restore (in order, per direction). */
  const held: Array<() => void> = [];
  const forward = (write: () => void): void => {
    if (frozen) held.push(write);
    else write();
  };
  const pairs = new Set<{ client: import("bun").Socket<unknown>; upstream?: import("bun").TCPSocket }>();
  const server = Bun.listen<{ pair: { client: import("bun").Socket<unknown>; upstream?: import("bun").TCPSocket; pending: Uint8Array[] } }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      async open(client) {
        if (!open) {
          client.end();
          return;
        }
        const pair = { client, upstream: undefined as import("bun").TCPSocket | undefined, pending: [] as Uint8Array[] };
        client.data = { pair };
        pairs.add(pair);
        pair.upstream = await Bun.connect({
          hostname: target.hostname,
          port: Number(target.port || 5672),
          socket: {
            data: (_s, chunk) => {
              const copy = new Uint8Array(chunk);
              forward(() => void client.write(copy));
            },
            close: () => void client.end(),
            error: () => void client.end(),
          },
        });
        for (const chunk of pair.pending) pair.upstream.write(chunk);
      },
      data(client, chunk) {
        const pair = client.data.pair;
        const copy = new Uint8Array(chunk);
        if (pair.upstream) forward(() => void pair.upstream!.write(copy));
        else pair.pending.push(copy);
      },
      close(client) {
        client.data?.pair.upstream?.end();
        if (client.data) pairs.delete(client.data.pair);
      },
      error() {},
    },
  });
  return {
    url: `amqp://${target.username}:${target.password}@127.0.0.1:${server.port}${target.pathname}`,
    cut() {
      open = false;
      frozen = false;
      held.length = 0;
      for (const p of pairs) {
        p.upstream?.end();
        p.client.end();
      }
      pairs.clear();
    },
    freeze() {
      frozen = true;
    },
    restore() {
      open = true;
      frozen = false;
      for (const write of held.splice(0)) write();
    },
    close() {
      this.cut();
      server.stop(true);
    },
  };
}
