// What the service counts, as plain numbers and hot-path histograms (metrics-histogram.ts): the
// token check records a few additions, and nothing here loads prom-client. prom-client (with its
// default process metrics and @opentelemetry/api, ~90 modules and ~30 ms of a start's CPU) is
// loaded by metrics-registry.ts only when a metrics listener is configured, or when a scrape is
// rendered; its metrics read these counts at scrape time (`collect`).
// `/metrics` is served on its own listener (`metrics.listen`, `metrics.port`), without
// authentication, as Prometheus expects: keep it on a private address.
import type { MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { AppContext } from "../boot/context.ts";
import { HotPathHistogram } from "./metrics-histogram.ts";
import type { MetricsRegistry, MetricsSources } from "./metrics-registry.ts";

export type { MetricsSources };

export const httpRequests = new HotPathHistogram(
  "tessera_http_request_duration_seconds",
  "HTTP requests by route template, method and status code",
  ["method", "route", "status_code"],
  [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
);

export const passwordHashes = new HotPathHistogram(
  "tessera_password_hash_duration_seconds",
  "Time of one password derivation (login, password change, user creation) by algorithm",
  ["algorithm"],
  [0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2],
);

export type TokenCheckResult = "valid" | "invalid" | "forbidden";
/** `throttled`: refused before any password work (login throttling); `rejected`: too many sessions. */
/** `mfa_required`: right password, second factor missing (the client retries with `mfa_code`). */
export type LoginResult = "success" | "failure" | "rejected" | "throttled" | "error" | "mfa_required";
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

/** The counters, read by metrics-registry.ts at scrape time. */
export const counts = {
  tokenChecks: { valid: 0, invalid: 0, forbidden: 0 } satisfies Record<TokenCheckResult, number>,
  tokenCacheLookups: { hit: 0, miss: 0 },
  /** By result and backend, keyed `result\0backend`. */
  logins: new Map<string, number>(),
  mfa: new Map<MfaOutcome, number>(),
  busPublishFailures: 0,
  /** Outbound delivery attempts (webhooks, back-channel logout) by kind and outcome, keyed `kind\0outcome`. */
  outboundDeliveries: new Map<string, number>(),
};

export const recordTokenCheck = (result: TokenCheckResult) => counts.tokenChecks[result]++;
export const recordTokenCacheLookup = (hit: boolean) =>
  hit ? counts.tokenCacheLookups.hit++ : counts.tokenCacheLookups.miss++;

const bump = <K>(map: Map<K, number>, key: K) => map.set(key, (map.get(key) ?? 0) + 1);
export const recordLogin = (result: LoginResult, backend = "unknown") => bump(counts.logins, `${result}\0${backend}`);
export const recordMfa = (outcome: MfaOutcome) => bump(counts.mfa, outcome);

/** Runs one derivation, observing its time. */
export async function timePasswordHash<T>(
  algorithm: "argon2id" | "pbkdf2_sha512",
  derive: () => Promise<T>,
): Promise<T> {
  const started = performance.now();
  try {
    return await derive();
  } finally {
    passwordHashes.cell({ algorithm }).observe((performance.now() - started) / 1000);
  }
}

export const recordBusPublishFailure = () => counts.busPublishFailures++;
export const recordOutboundDelivery = (kind: string, outcome: "delivered" | "failed" | "gave_up" | "dropped") =>
  bump(counts.outboundDeliveries, `${kind}\0${outcome}`);

const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
const fastCheckValid = httpRequests.cell({ method: "HEAD", route: "/0.1/token/:token", status_code: "204" });
const fastCheckUnknown = httpRequests.cell({ method: "HEAD", route: "/0.1/token/:token", status_code: "404" });

/**
 * A token check answered before the router (http/fast-token-check.ts): counted as the route would
 * count it, the histogram only when the listener is configured (as the middleware).
 */
export function recordFastTokenCheck(app: AppContext, result: "valid" | "invalid", durationMs: number): void {
  counts.tokenChecks[result]++;
  if (result === "valid") counts.tokenCacheLookups.hit++;
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

let registry: Promise<MetricsRegistry> | null = null;

/** The process's registry, built (and prom-client loaded) on first use. */
function prometheus(): Promise<MetricsRegistry> {
  registry ??= import("./metrics-registry.ts").then((m) => m.createRegistry(counts, [httpRequests, passwordHashes]));
  return registry;
}

/** The scrape's text, in Prometheus' format. */
export async function renderMetrics(): Promise<{ body: string; contentType: string }> {
  const { registry } = await prometheus();
  return { body: await registry.metrics(), contentType: registry.contentType };
}

/** The metrics listener (`GET /metrics`), when `metrics.port` is configured; else null. */
export async function startMetricsServer(
  app: AppContext,
  from: MetricsSources,
): Promise<ReturnType<typeof Bun.serve> | null> {
  const { listen, port } = app.config.metrics;
  if (port === null) return null;
  (await prometheus()).bind(app, from);
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
