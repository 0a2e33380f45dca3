// The documented HAProxy configuration (docs/scaling.md, tests/helpers/haproxy.ts) replays on
// another instance a request whose instance died before answering (`empty-response`) only when the
// request changes nothing: token introspection is a POST that only reads (RFC 7662), so it is
// replayed; a login is not (its first attempt may have committed). One backend here is a socket that
// passes the health check and then drops every POST unanswered, as an instance killed mid-request.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import { haproxyBinary, startHaproxy, type Haproxy } from "../helpers/haproxy.ts";

describe.skipIf(!haproxyBinary)("HAProxy replays introspection on an empty response, never a login", () => {
  let dying: TCPSocketListener<undefined>;
  let healthy: ReturnType<typeof Bun.serve>;
  let lb: Haproxy;
  let dropped = 0;

  beforeAll(async () => {
    // Answers the readiness check; closes on any other request without a byte (an empty response).
    dying = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data(socket: Socket<undefined>, data) {
          if (data.toString().startsWith("GET /0.1/ready ")) {
            socket.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            return;
          }
          dropped++;
          socket.end();
        },
      },
    });
    healthy = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (req) => {
        const path = new URL(req.url).pathname;
        if (path === "/0.1/ready") return new Response(null, { status: 200 });
        if (path === "/0.1/oidc/introspect") {
          const body = await req.text();
          return Response.json({ active: true, echoed: body });
        }
        return Response.json({ data: { token: "t" } });
      },
    });
    lb = await startHaproxy([
      { name: "dying", port: dying.port },
      { name: "healthy", port: healthy.port! },
    ]);
    // Both servers up (checks pass twice): round robin alternates between them.
    const end = Date.now() + 10_000;
    const seen = new Set<string>();
    while (seen.size < 2 && Date.now() < end) {
      const r = await fetch(`${lb.url}/ready`);
      seen.add(r.headers.get("x-served-by") ?? "");
      await Bun.sleep(100);
    }
    expect(seen).toEqual(new Set(["dying", "healthy"]));
  }, 30_000);

  afterAll(async () => {
    await lb?.stop();
    dying?.stop(true);
    await healthy?.stop(true);
  });

  test("introspection: every answer 200 with its body, some replayed; a login is not", async () => {
    const introspections = [];
    for (let i = 0; i < 6; i++) {
      const r = await fetch(`${lb.url}/oidc/introspect`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: "Basic eDp5" },
        body: `token=token-${i}`,
      });
      introspections.push([r.status, ((await r.json()) as { echoed: string }).echoed]);
    }
    expect(introspections).toEqual(Array.from({ length: 6 }, (_, i) => [200, `token=token-${i}`]));
    expect(dropped).toBeGreaterThan(0); // some went to the dying instance first and were replayed

    const before = dropped;
    const logins: Array<number | "closed"> = [];
    for (let i = 0; i < 4; i++) {
      try {
        const r = await fetch(`${lb.url}/token`, {
          method: "POST",
          headers: { Authorization: "Basic eDp5" },
          body: "{}",
        });
        logins.push(r.status);
        await r.arrayBuffer();
      } catch {
        logins.push("closed");
      }
    }
    expect(dropped).toBeGreaterThan(before);
    // The one sent to the dying instance is not replayed: a 502 or a closed connection.
    expect(logins.filter((s) => s !== 200).length).toBeGreaterThan(0);
    expect(logins.every((s) => s === 200 || s === 502 || s === "closed")).toBe(true);
  }, 30_000);
});
