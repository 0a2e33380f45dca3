// Process entry: config → database (+ migrations) → plugins and startup work → HTTP → jobs.
// SIGINT/SIGTERM drain in-flight requests, stop jobs and close the database.
//
// Only light modules are imported statically: the embedded database's thread starts first (db/
// pglite-early.ts), then what precedes the database loads (the configuration, the database layer),
// and the service's own modules load while the database opens (on a restart of the embedded
// database the longest steps run side by side on a 2-core machine; docs/benchmarks.md, start-up).
import { dropEarlyThread, startEmbeddedThreadEarly } from "./db/pglite-early.ts";
import { describeCause } from "./db/failures.ts";
import { createProcessLogger } from "./observe/log.ts";
import type { PeerSource } from "./http/fast-token-check.ts";
import { messageOf, portProblem, START_EXIT } from "./boot/start-checks.ts";

/** What precedes the database, imported once the embedded database's thread has started. */
const startModules = () =>
  Promise.all([
    import("./config/config.ts"),
    import("./db/index.ts"),
    import("./db/adopt.ts"),
    import("./boot/cluster.ts"),
  ]);

/** The modules of the running service, imported while the database opens. */
const serviceModules = () =>
  Promise.all([
    import("./app.ts"),
    import("./http/limits.ts"),
    import("./services/app-context.ts"),
    import("./boot/startup.ts"),
    import("./plugins/loader.ts"),
    import("./observe/metrics.ts"),
    import("./bus/outbox.ts"),
    import("./services/outbound/delivery-queue.ts"),
    import("./api/ready.ts"),
    import("./boot/jobs.ts"),
  ]);

export async function serve(argv: string[] = process.argv): Promise<void> {
  // A stop asked during start-up (migrations, plugins) is honoured once started, cleanly: the
  // database is closed (and PGlite's lock released) rather than the process killed midway.
  let stopRequested: string | null = null;
  let stopNow: ((signal: string) => Promise<void>) | null = null;
  const onSignal = (signal: string) => (stopNow ? void stopNow(signal) : void (stopRequested ??= signal));
  process.on("SIGINT", () => onSignal("SIGINT"));
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  startEmbeddedThreadEarly(argv, process.env);
  const [
    { ConfigError, loadConfigWithSource },
    { openDatabase },
    { adoptionNote },
    { announceReady, isPrimary, isWorker, runPrimary },
  ] = await startModules();
  let config;
  let configWarnings: string[];
  try {
    ({ config, warnings: configWarnings } = loadConfigWithSource(argv));
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`tessera: ${e.message}`);
      process.exit(START_EXIT.config);
    }
    throw e;
  }
  if (config.db_uri) dropEarlyThread(); // started on a wrong guess
  const log = createProcessLogger(config.debug ? "debug" : config.log_level, config.log_filename);
  if (!isWorker()) for (const warning of configWarnings) log.warn(warning); // once, not once per worker
  // Before the database: a taken port must not cost a first start's migrations. (Workers share the
  // port their siblings hold; their primary checked it.)
  const unbindable = isWorker() ? null : portProblem(config);
  if (unbindable) {
    log.error(unbindable);
    process.exit(START_EXIT.port);
  }
  if (isPrimary(config, log)) {
    dropEarlyThread(); // the primary opens no database: its workers do
    return runPrimary(config, log);
  }
  const opening = openDatabase({
    url: config.db_uri,
    dataDir: config.data_dir,
    poolSize: config.db_pool_size,
    timeoutSeconds: config.db_timeout,
    watchdogSeconds: config.db_watchdog_seconds,
  });
  const loading = serviceModules();
  loading.catch(() => {}); // awaited below, once the database is open
  let database;
  try {
    database = await opening;
  } catch (e) {
    const cause = describeCause(e);
    log.error("cannot open the database", {
      code: cause.code,
      error: cause.message,
      ...(config.db_uri ? {} : { data_dir: config.data_dir }),
    });
    process.exit(1);
  }
  // A process whose embedded database is gone can only answer 503: it stops, so that its
  // supervisor (systemd, a container runtime) starts it again, and PGlite recovers on opening.
  database.onLost((reason) => {
    log.error("the embedded database stopped; exiting so the service is restarted", { reason });
    process.exit(1);
  });
  log.info("database ready", {
    kind: database.kind,
    ...(database.kind === "pglite" ? { data_dir: config.data_dir } : {}),
    ...adoptionNote(database.db),
  });
  const [
    { createHandler },
    { RUNTIME_BODY_BYTES },
    { buildContext, closeContext, closeContextWithin },
    { startServices },
    { PluginLoadError },
    { startMetricsServer },
    { outboxBacklog },
    { deliveryBacklog },
    { notReady },
    { startJobs },
  ] = await loading;
  let app;
  try {
    app = await buildContext(config, database, log);
    await startServices(app, { keysInBackground: true });
  } catch (e) {
    log.error("start-up failed", { error: messageOf(e), ...(e instanceof PluginLoadError ? { kind: "plugin" } : {}) });
    await (app ? closeContext(app) : database.close()).catch(() => {});
    process.exit(START_EXIT.failed);
  }
  const handle = createHandler(app);
  // Draining (after SIGTERM/SIGINT): every response says `Connection: close`, so keep-alive clients
  // stop sending on their connection after the answer instead of racing its closure, and the
  // liveness and readiness probes answer 503 so load balancers stop routing here.
  let draining = false;
  const drainingFetch = async (req: Request, peers: PeerSource): Promise<Response> => {
    const res = isLivenessProbe(req)
      ? new Response(null, { status: 503 })
      : isReadinessProbe(req)
        ? drainingAnswer(req, notReady)
        : await handle(req, peers);
    try {
      res.headers.set("Connection", "close");
      return res;
    } catch {
      const headers = new Headers(res.headers); // an immutable response (e.g. a redirect)
      headers.set("Connection", "close");
      return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
    }
  };
  let server;
  try {
    server = Bun.serve({
      hostname: config.rest_api.listen,
      port: config.rest_api.port,
      reusePort: config.workers > 1, // the workers of src/boot/cluster.ts share the port
      maxRequestBodySize: RUNTIME_BODY_BYTES,
      // The server is where the peer address is looked up, only when something reads it (logging, login).
      fetch: (req, srv) => (draining ? drainingFetch(req, srv) : handle(req, srv)),
    });
  } catch (e) {
    // Taken since the check above (a race): the same line and code.
    log.error(portProblem(config) ?? `cannot listen: ${messageOf(e)}`);
    await closeContext(app).catch(() => {});
    process.exit(START_EXIT.port);
  }
  log.info("listening", { address: `http://${config.rest_api.listen}:${server.port}` });
  announceReady();
  startJobs(app); // scheduled work, once the service answers (the purge's first run is one interval later)
  const metricsServer = await startMetricsServer(app, {
    outboxBacklog: () => outboxBacklog(app),
    deliveryBacklog: () => deliveryBacklog(app),
  });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    draining = true;
    log.info("shutting down", { signal, drain_seconds: config.shutdown_drain_seconds });
    // Busy keep-alive connections learn within one request that they must close; then the socket
    // stops accepting, in-flight requests finish (bounded), and idle connections are closed.
    await Bun.sleep(config.shutdown_drain_seconds * 1000);
    await server.stop(false);
    const deadline = Date.now() + (config.db_timeout + 5) * 1000;
    while (server.pendingRequests > 0 && Date.now() < deadline) await Bun.sleep(20);
    await server.stop(true);
    await metricsServer?.stop(true);
    // Bounded: with the database frozen, closing would wait for it for ever. Past the deadline the
    // process exits anyway (exit 1: the stop was not clean) and names what it left unfinished.
    const abandoned = await closeContextWithin(app, (config.db_timeout + 5) * 1000);
    if (abandoned.length > 0) {
      log.error("shutdown deadline passed; exiting with work abandoned", {
        signal,
        abandoned,
        pending_requests: server.pendingRequests,
      });
      process.exit(1);
    }
    log.info("stopped", { signal });
    process.exit(0);
  };
  stopNow = stop;
  if (stopRequested) void stop(stopRequested);
}

function isLivenessProbe(req: Request): boolean {
  return req.method === "HEAD" && new URL(req.url).pathname.replace(/\/$/, "") === "/0.1/status";
}

function isReadinessProbe(req: Request): boolean {
  return (
    (req.method === "HEAD" || req.method === "GET") && new URL(req.url).pathname.replace(/\/$/, "") === "/0.1/ready"
  );
}

/** The readiness probe's 503 while draining: the one error body, naming the reason. */
function drainingAnswer(req: Request, notReady: typeof import("./api/ready.ts")["notReady"]): Response {
  const body = notReady({ draining: "fail" }, "Not ready: the instance is shutting down").toBody();
  return new Response(req.method === "HEAD" ? null : JSON.stringify(body), {
    status: 503,
    headers: { "Content-Type": "application/json" },
  });
}

if (import.meta.main) {
  await serve().catch((e) => {
    console.error(`tessera: start-up failed: ${messageOf(e)}`);
    process.exit(START_EXIT.failed);
  });
}
