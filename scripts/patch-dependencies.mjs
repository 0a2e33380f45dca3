// Run by npm after every install (`postinstall`), with node or bun: fixes a defect of postgres.js
// 3.4.x that upstream has not released a fix for (porsager/postgres#1066, #1154, #1208; fix
// proposed in #1168, #1176, #1209). Idempotent; fails loudly if the code to patch is not found.
//
// The defect: a transaction whose connection closes (PostgreSQL restarted, crashed, failed over)
// sends its ROLLBACK on that closed, reserved connection; the write is deferred with setImmediate
// and then runs `socket.write` on a null socket — an uncaught TypeError that kills the process.
// And a deferred write pending when a connection closes is kept and sent in front of the next
// connection's startup message, so that connection never starts (CONNECT_TIMEOUT after
// CONNECT_TIMEOUT). The patch: a write without a socket fails the query as CONNECTION_CLOSED (a
// 503 for Tessera) and hands the connection back to the pool as closed (reconnected on demand,
// never left in its busy or full queue, where it would shrink the pool for good); a closing
// connection drops its pending write.
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "node_modules", "postgres");
const MARK = "/* tessera: porsager/postgres#1208 */";
const connectionPatches = [
  {
    from: "  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)",
    to: [
      "  function nextWrite(fn) {",
      `    ${MARK}`,
      "    if (!socket) {",
      "      nextWriteTimer !== null && clearImmediate(nextWriteTimer)",
      "      chunk = nextWriteTimer = null",
      "      const closedError = Errors.connection('CONNECTION_CLOSED', options)",
      "      error(closedError)",
      "      connection.queue === queues.closed || onclose(connection, closedError)",
      "      return true",
      "    }",
      "    const x = socket.write(chunk, fn)",
    ].join("\n"),
  },
  {
    from: "    incomings = null\n    clearImmediate(nextWriteTimer)\n    socket.removeListener('data', data)",
    to: `    incomings = null\n    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null ${MARK}\n    socket.removeListener('data', data)`,
  },
  {
    // Every query in flight was failed above (or by the socket's 'error' event): neither it nor an
    // error the server sent before closing (57P01) may linger, to be given by the next connection's
    // first ReadyForQuery to the first query it runs.
    from: "    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))\n",
    to: "    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))\n    query = results = errorResponse = null, result = new Result() /* tessera: porsager/postgres#1208 */\n",
  },
];

// A reserved connection released after it closed stays closed (the pool reconnects it on demand)
// instead of being put back among the open ones, where the next query would fail on it.
const indexPatches = [
  {
    from: "    sql.release = () => {\n      c.reserved = null\n      onopen(c)\n    }",
    to: `    sql.release = () => {\n      c.reserved = null\n      c.queue === closed || onopen(c) ${MARK}\n    }`,
  },
];

function patch(file, patches) {
  if (!existsSync(file)) return;
  let text = readFileSync(file, "utf8");
  if (text.includes(MARK)) return;
  for (const { from, to } of patches) {
    if (!text.includes(from))
      throw new Error(
        `patch-dependencies: ${file} does not hold the code to patch (postgres.js changed?): check porsager/postgres#1208`,
      );
    text = text.replace(from, to);
  }
  writeFileSync(file, text);
  console.log(`patch-dependencies: patched ${file}`);
}

if (existsSync(root)) {
  for (const dir of ["src", "cjs/src", "cf/src"]) {
    patch(join(root, dir, "connection.js"), connectionPatches);
    patch(join(root, dir, "index.js"), indexPatches);
  }
}
