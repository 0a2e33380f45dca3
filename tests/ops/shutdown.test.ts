// Graceful shutdown of the real process under keep-alive load: SIGTERM while clients keep sending
// on persistent connections. No request written on a connection may go unanswered: answers after
// SIGTERM say `Connection: close` (the client then opens a new connection, which is served during
// the drain or refused once the socket is closed: a refused connection carries no request). A
// connection opened during the drain in the very instant the socket closes may still be reset by
// the kernel (it waited in the accept queue): those are counted apart and reported.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitForService } from "../helpers/service-process.ts";

const root = join(import.meta.dir, "../..");
const dir = mkdtempSync(join(tmpdir(), "tessera-shutdown-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function freePort(): number {
  const server = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}

interface Tally {
  answered: number;
  /** Requests unanswered on connections open before SIGTERM. */
  dropped: number;
  /** Requests unanswered on connections opened during the drain. */
  lateDropped: number;
  refused: number;
  closeAnswers: number;
}

/** One client: requests one after the other on a keep-alive connection, reconnecting when told to close. */
async function client(
  port: number,
  path: string,
  until: () => boolean,
  stopping: () => boolean,
  tally: Tally,
): Promise<void> {
  while (!until()) {
    const outcome = await new Promise<"closed" | "refused" | "stop">((resolve) => {
      const socket = connect(port, "127.0.0.1");
      const late = stopping();
      const drop = () => (late ? tally.lateDropped++ : tally.dropped++);
      let buffer = "";
      let waiting = false;
      const send = () => {
        if (until()) {
          socket.end();
          return resolve("stop");
        }
        waiting = true;
        socket.write(`HEAD ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      };
      socket.on("connect", send);
      socket.on("data", (chunk) => {
        buffer += chunk.toString("latin1");
        const end = buffer.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buffer.slice(0, end);
        buffer = buffer.slice(end + 4);
        waiting = false;
        tally.answered++;
        if (/\r\nconnection: close/i.test(head)) {
          tally.closeAnswers++;
          socket.end();
          return resolve("closed");
        }
        send();
      });
      socket.on("error", (e: NodeJS.ErrnoException) => {
        if (e.code === "ECONNREFUSED") tally.refused++;
        else if (waiting) drop();
        waiting = false;
        resolve(e.code === "ECONNREFUSED" ? "refused" : "closed");
      });
      socket.on("close", () => {
        if (waiting) drop();
        waiting = false;
        resolve("closed");
      });
    });
    if (outcome === "refused" || outcome === "stop") return;
  }
}

test("SIGTERM under keep-alive load: no request dropped, in-flight ones finish, exit 0", async () => {
  const port = freePort();
  const env = {
    ...process.env,
    TESSERA_DATA_DIR: join(dir, "data"),
    TESSERA_PORT: String(port),
    TESSERA_LOG_LEVEL: "warning",
  };
  const proc = Bun.spawn([process.execPath, "src/main.ts"], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  expect(await waitForService(`http://127.0.0.1:${port}/0.1`, 90)).toBe(true);
  const tally: Tally = { answered: 0, dropped: 0, lateDropped: 0, refused: 0, closeAnswers: 0 };
  let exited = false;
  let stopping = false;
  const path = "/0.1/token/00000000-0000-4000-8000-000000000000";
  const clients = Array.from({ length: 16 }, () =>
    client(
      port,
      path,
      () => exited,
      () => stopping,
      tally,
    ),
  );
  await Bun.sleep(1000);
  const before = tally.answered;
  stopping = true;
  proc.kill("SIGTERM");
  const code = await proc.exited;
  exited = true;
  await Promise.all(clients);
  expect(code).toBe(0);
  expect(before).toBeGreaterThan(0);
  expect(tally.closeAnswers).toBeGreaterThan(0);
  console.log("shutdown under keep-alive load:", tally);
  expect(tally.dropped).toBe(0);
}, 150_000);
