// Prometheus metrics (prom-client). What the token check records costs a few additions: its counts
// are plain numbers copied into prom-client's counters at scrape time (`collect`), and the request
// histogram is metrics-histogram.ts (observed by the shortcut and by a middleware mounted only when
// a metrics listener is configured). The other metrics are prom-client's own; gauges read their
// value at scrape time.
// `/metrics` is served on its own listener (`metrics.listen`, `metrics.port`), without
// authentication, as Prometheus expects: keep it on a private address.
import type { MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { AppContext } from "./context.ts";
import { HotPathHistogram } from "./metrics-histogram.ts";

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: "tessera_" });

const httpRequests = new HotPathHistogram(
  "tessera_http_request_duration_seconds",
  "HTTP requests by route template, method and status code",
  ["method", "route", "status_code"],
  [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
);
registry.registerMetric(httpRequests as never);

/** Counts kept as plain numbers by the hot path, handed to a prom-client counter when scraped. */
function scrapedCounter<K extends string>(
  name: string,
  help: string,
  label: string,
  keys: readonly K[],
): Record<K, number> {
  const counts = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  new Counter({
    name,
    help,
    labelNames: [label],
    registers: [registry],
    collect() {
      this.reset();
      for (const k of keys) this.inc({ [label]: k }, counts[k]);
    },
  });
  return counts;
}

export type TokenCheckResult = "valid" | "invalid" | "forbidden";
const tokenChecks = scrapedCounter<TokenCheckResult>(
  "tessera_token_checks_total",
  "Token checks (HEAD/GET /token/{token}, scopes/check) by result",
  "result",
  ["valid", "invalid", "forbidden"],
);
export const recordTokenCheck = (result: TokenCheckResult) => tokenChecks[result]++;

const tokenCacheLookups = scrapedCounter(
  "tessera_token_cache_lookups_total",
  "In-memory token cache lookups by result (hit ratio: hit / (hit + miss))",
  "result",
  ["hit", "miss"],
);
export const recordTokenCacheLookup = (hit: boolean) => (hit ? tokenCacheLookups.hit++ : tokenCacheLookups.miss++);

const logins = new Counter({
  name: "tessera_logins_total",
  help: "Logins (POST /token) by result and by the identity provider (backend) that handled them",
  labelNames: ["result", "backend"] as const,
  registers: [registry],
});
/** `throttled`: refused before any password work (login throttling); `rejected`: too many sessions. */
/** `mfa_required`: right password, second factor missing (the client retries with `mfa_code`). */
export type LoginResult = "success" | "failure" | "rejected" | "throttled" | "error" | "mfa_required";
export const recordLogin = (result: LoginResult, backend = "unknown") => logins.labels(result, backend).inc();

const mfaOutcomes = new Counter({
  name: "tessera_mfa_total",
  help: "Multi-factor authentication outcomes: logins asked for a code, codes accepted or refused, recovery codes used, factors enrolled or removed, restricted (enrol-only) logins, passkey assertions accepted or refused",
  labelNames: ["outcome"] as const,
  registers: [registry],
});
export type MfaOutcome =
  | "required"
  | "accepted"
  | "refused"
  | "recovery_code_used"
  | "enrolled"
  | "removed"
  | "restricted"
  | "passkey_accepted"
  | "passkey_refused";
export const recordMfa = (outcome: MfaOutcome) => mfaOutcomes.labels(outcome).inc();

const passwordHash = new Histogram({
  name: "tessera_password_hash_duration_seconds",
  help: "Time of one password derivation (login, password change, user creation) by algorithm",
  labelNames: ["algorithm"] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2],
  registers: [registry],
});
/** Runs one derivation, observing its time. */
export async function timePasswordHash<T>(
  algorithm: "argon2id" | "pbkdf2_sha512",
  derive: () => Promise<T>,
): Promise<T> {
  const done = passwordHash.startTimer({ algorithm });
  try {
    return await derive();
  } finally {
    done();
  }
}

const busPublishFailures = new Counter({
  name: "tessera_bus_publish_failures_total",
  help: "Interrupted deliveries of the event outbox to the message bus (each is retried)",
  registers: [registry],
});
export const recordBusPublishFailure = () => busPublishFailures.inc();

/**
 * What the scrape-time gauges read that belongs to another layer, handed in by the composition root
 * (main.ts), so that metrics reach into no other module (the bus, the database).
 */
export interface MetricsSources {
  outboxBacklog(): Promise<number>;
}

/** The application the scrape-time gauges read (the process serves one). */
let current: AppContext | null = null;
let sources: MetricsSources | null = null;

new Gauge({
  name: "tessera_outbox_backlog",
  help: "Events waiting in the outbox for the message bus",
  registers: [registry],
  async collect() {
    if (sources) this.set(await sources.outboxBacklog().catch(() => Number.NaN));
  },
});

new Gauge({
  name: "tessera_database_up",
  help: "1 when the database answers a ping",
  registers: [registry],
  async collect() {
    if (current) this.set((await current.database.ping()) ? 1 : 0);
  },
});

new Gauge({
  name: "tessera_database_pool_max_connections",
  help: "Connections the PostgreSQL pool may open (1 for the embedded database)",
  registers: [registry],
  collect() {
    if (current) this.set(current.database.kind === "postgres" ? current.config.db_pool_size : 1);
  },
});

new Gauge({
  name: "tessera_token_cache_entries",
  help: "Tokens held in the in-memory cache",
  registers: [registry],
  collect() {
    if (current) this.set(current.tokenCache.size);
  },
});

const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
const fastCheckValid = httpRequests.cell({ method: "HEAD", route: "/0.1/token/:token", status_code: "204" });
const fastCheckUnknown = httpRequests.cell({ method: "HEAD", route: "/0.1/token/:token", status_code: "404" });

/**
 * A token check answered before the router (http/fast-token-check.ts): counted as the route would
 * count it, the histogram only when the listener is configured (as the middleware).
 */
export function recordFastTokenCheck(app: AppContext, result: "valid" | "invalid", durationMs: number): void {
  tokenChecks[result]++;
  if (result === "valid") tokenCacheLookups.hit++;
  if (app.config.metrics.port !== null)
    (result === "valid" ? fastCheckValid : fastCheckUnknown).observe(durationMs / 1000);
}

/** Hono middleware observing each request under its route template (bounded label values). */
export function requestMetrics(): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const routes = matchedRoutes(c);
      let route = "unmatched";
      for (let i = routes.length - 1; i >= 0; i--) {
        if (routes[i]!.method !== "ALL") {
          route = routes[i]!.path;
          break;
        }
      }
      const method = KNOWN_METHODS.has(c.req.method) ? c.req.method : "OTHER";
      httpRequests
        .cell({ method, route, status_code: String(c.res.status) })
        .observe((performance.now() - started) / 1000);
    }
  };
}

/** Binds the scrape-time gauges to `app`. */
export function bindMetrics(app: AppContext, from: MetricsSources): void {
  current = app;
  sources = from;
}

export async function renderMetrics(): Promise<{ body: string; contentType: string }> {
  return { body: await registry.metrics(), contentType: registry.contentType };
}

/** The metrics listener (`GET /metrics`), when `metrics.port` is configured; else null. */
export function startMetricsServer(app: AppContext, from: MetricsSources): ReturnType<typeof Bun.serve> | null {
  const { listen, port } = app.config.metrics;
  if (port === null) return null;
  bindMetrics(app, from);
  const server = Bun.serve({
    hostname: listen,
    port,
    async fetch(req) {
      if (new URL(req.url).pathname !== "/metrics")
        return new Response("Not found: scrape /metrics\n", { status: 404 });
      const { body, contentType } = await renderMetrics();
      return new Response(body, { headers: { "Content-Type": contentType } });
    },
  });
  app.log.info("metrics listening", { address: `http://${listen}:${server.port}/metrics` });
  return server;
}
