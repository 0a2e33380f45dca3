// A loopback TCP proxy in front of a server (RabbitMQ, a private PostgreSQL cluster) that a test
// or the chaos script (scripts/chaos.ts) breaks on purpose: `cut()` drops every connection and
// refuses new ones (a server gone); `freeze()` keeps connections open but forwards nothing (a
// frozen server, or a network partition that drops packets); `restore()` accepts and forwards again.
import type { Socket, TCPSocket } from "bun";

export interface TcpProxy {
  port: number;
  cut(): void;
  freeze(): void;
  restore(): void;
  close(): void;
}

interface Pair {
  client: Socket<unknown>;
  upstream?: TCPSocket;
  pending: Uint8Array[];
}

export function tcpProxy(host: string, port: number): TcpProxy {
  let open = true;
  let frozen = false;
  /** What arrived while frozen, delivered on restore (in order, per direction). */
  const held: Array<() => void> = [];
  const forward = (write: () => void): void => {
    if (frozen) held.push(write);
    else write();
  };
  const pairs = new Set<Pair>();
  const server = Bun.listen<{ pair: Pair }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      async open(client) {
        if (!open) {
          client.end();
          return;
        }
        const pair: Pair = { client, pending: [] };
        client.data = { pair };
        pairs.add(pair);
        try {
          pair.upstream = await Bun.connect({
            hostname: host,
            port,
            socket: {
              data: (_s, chunk) => {
                const copy = new Uint8Array(chunk);
                forward(() => void client.write(copy));
              },
              close: () => void client.end(),
              error: () => void client.end(),
            },
          });
        } catch {
          client.end();
          return;
        }
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
    port: server.port,
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
