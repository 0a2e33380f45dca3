// The embedded database's own thread (started by pglite-client.ts): PGlite runs here, in a heap of
// its own, and answers what the main thread posts. See pglite-client.ts for why.
import { PGlite, type Transaction } from "@electric-sql/pglite";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  compileEngine,
  PGLITE_EXTENSIONS,
  PGLITE_SETTINGS,
  serializeError,
  type ThreadReply,
  type ThreadRequest,
} from "./pglite-protocol.ts";

let db: PGlite | null = null;
/** The engine compiled on `prepare`, before the `open` that uses it. */
let prepared: Promise<WebAssembly.Module> | null = null;

interface OpenTransaction {
  tx?: Transaction;
  /** Lets PGlite's transaction callback return (commit) or throw (roll back). */
  end(commit: boolean): void;
  /** Settles when PGlite has committed or rolled back; rejects when the commit failed. */
  done: Promise<void>;
}
const transactions = new Map<number, OpenTransaction>();
const unlisten = new Map<string, () => Promise<void>>();
/** Parsers keeping a type's text as is (drizzle's, for dates and intervals), by list of types. */
const keepText = new Map<string, Record<number, (value: string) => string>>();

class RolledBack extends Error {}

const post = (reply: ThreadReply) => postMessage(reply);

function parsersFor(types: number[] | undefined): Record<number, (value: string) => string> | undefined {
  if (!types) return undefined;
  const key = types.join(",");
  let parsers = keepText.get(key);
  if (!parsers) keepText.set(key, (parsers = Object.fromEntries(types.map((t) => [t, (v: string) => v]))));
  return parsers;
}

async function open(request: Extract<ThreadRequest, { op: "open" }>): Promise<void> {
  const carried = request.modules;
  let extensions = PGLITE_EXTENSIONS;
  let trgmDir: string | null = null;
  if (carried) {
    // A single-file build: PGlite reads the extension's bundle from a real file, written here.
    trgmDir = mkdtempSync(join(tmpdir(), "tessera-pg_trgm-"));
    const file = join(trgmDir, "pg_trgm.tar.gz");
    writeFileSync(file, new Uint8Array(carried.pgTrgmBundle));
    extensions = {
      pg_trgm: {
        name: "pg_trgm",
        setup: async () => ({ bundlePath: pathToFileURL(file) }),
      } as unknown as typeof PGLITE_EXTENSIONS.pg_trgm,
    };
  }
  const engine = request.engine ?? (await prepared?.catch(() => undefined)); // else PGlite compiles it
  try {
    db = await PGlite.create(request.dataDir, {
      extensions,
      startParams: [...PGlite.defaultStartParams, ...PGLITE_SETTINGS],
      ...(carried
        ? {
            pgliteWasmModule: carried.wasm,
            initdbWasmModule: carried.initdbWasm,
            fsBundle: new Blob([carried.fsBundle]),
          }
        : engine
          ? { pgliteWasmModule: engine }
          : {}),
      ...(request.template ? { loadDataDir: request.template } : {}),
    });
  } finally {
    if (trgmDir) rmSync(trgmDir, { recursive: true, force: true });
  }
}

/** Opens a transaction and resolves once it has begun; it stays open until an `end` request. */
function begin(id: number, database: PGlite): Promise<void> {
  return new Promise<void>((begun, failed) => {
    const entry = { end: () => {} } as unknown as OpenTransaction;
    transactions.set(id, entry);
    const run = database.transaction((tx) => {
      entry.tx = tx;
      begun();
      return new Promise<void>(
        (commit, rollBack) => (entry.end = (ok) => (ok ? commit() : rollBack(new RolledBack()))),
      );
    });
    run.catch(failed); // a failure to begin (after begun, this does nothing)
    entry.done = run
      .catch((e) => {
        if (!(e instanceof RolledBack)) throw e;
      })
      .finally(() => transactions.delete(id));
    entry.done.catch(() => {});
  });
}

async function handle(request: ThreadRequest): Promise<unknown> {
  if (request.op === "open") return open(request);
  if (request.op === "prepare") {
    prepared ??= compileEngine();
    prepared.catch(() => {}); // awaited by `open`, which then lets PGlite compile it
    return undefined;
  }
  if (!db) throw new Error("PGlite is closed");
  switch (request.op) {
    case "query": {
      const target = request.tx === undefined ? db : transactions.get(request.tx)?.tx;
      if (!target) throw new Error("the transaction has ended");
      return target.query(request.text, request.params, {
        rowMode: request.rowMode,
        parsers: parsersFor(request.keepText),
      });
    }
    case "begin":
      return begin(request.id, db);
    case "end": {
      const entry = transactions.get(request.tx);
      if (!entry) throw new Error("the transaction has ended");
      entry.end(request.commit);
      return entry.done;
    }
    case "listen":
      if (!unlisten.has(request.channel))
        unlisten.set(
          request.channel,
          await db.listen(request.channel, (payload) => post({ notify: request.channel, payload })),
        );
      return undefined;
    case "unlisten": {
      const stop = unlisten.get(request.channel);
      unlisten.delete(request.channel);
      await stop?.();
      return undefined;
    }
    case "dump":
      // Statements run one at a time here, so nothing writes while the files are read; a transaction
      // still open is in the copy's WAL and rolled back when the copy is opened, as after a crash.
      return new Uint8Array(await (await db.dumpDataDir("gzip")).arrayBuffer());
    case "close": {
      // The thread may be kept for another database (pglite-client.ts): nothing of this one stays.
      const closing = db;
      db = null;
      unlisten.clear();
      await closing.close();
      return undefined;
    }
  }
}

self.onmessage = (event: MessageEvent<ThreadRequest>) => {
  const request = event.data;
  handle(request).then(
    (value) => post({ id: request.id, value }),
    (e) => post({ id: request.id, error: serializeError(e) }),
  );
};
