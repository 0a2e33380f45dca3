// Process entry: config → database (+ migrations) → plugins and startup work → HTTP → jobs.
// SIGINT/SIGTERM drain in-flight requests, stop jobs and close the database.
import { ConfigError, loadConfig } from "./config.ts";
import { openDatabase } from "./db/index.ts";
import { adoptionNote } from "./db/adopt.ts";
import { createProcessLogger } from "./log.ts";
import { createHandler } from "./app.ts";
import { buildContext, closeContext } from "./services/app-context.ts";
import { startServices } from "./startup.ts";
import { PluginLoadError } from "./plugins/loader.ts";
import { announceReady, isPrimary, runPrimary } from "./cluster.ts";

export async function serve(argv: string[] = process.argv): Promise<void> {
  let config;
  try {
    config = loadConfig(argv);
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`tessera: ${e.message}`);
      process.exit(2);
    }
    throw e;
  }
  const log = createProcessLogger(config.debug ? "debug" : config.log_level, config.log_filename);
  if (isPrimary(config, log)) return runPrimary(config, log);
  let database;
  try {
    database = await openDatabase({ url: config.db_uri, dataDir: config.data_dir, poolSize: config.db_pool_size });
  } catch (e) {
    log.error("cannot open the database", { error: (e as Error).message });
    process.exit(1);
  }
  log.info("database ready", { kind: database.kind, ...(database.kind === "pglite" ? { data_dir: config.data_dir } : {}), ...adoptionNote(database.db) });
  const app = await buildContext(config, database, log);
  try {
    await startServices(app);
  } catch (e) {
    if (e instanceof PluginLoadError || e instanceof Error) {
      log.error("start-up failed", { error: e.message });
      await closeContext(app);
      process.exit(1);
    }
  }
  const handle = createHandler(app);
  const server = Bun.serve({
    hostname: config.rest_api.listen,
    port: config.rest_api.port,
    reusePort: config.workers > 1, // the workers of src/cluster.ts share the port
    // The peer address is looked up only when something reads it (logging, login).
    fetch: (req, srv) => handle(req, () => srv.requestIP(req)?.address ?? ""),
  });
  log.info("listening", { address: `http://${config.rest_api.listen}:${server.port}` });
  announceReady();

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    await server.stop(false); // stop accepting, let in-flight requests finish
    await closeContext(app);
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
}

if (import.meta.main) await serve();
