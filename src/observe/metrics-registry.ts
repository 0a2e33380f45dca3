// The Prometheus registry (prom-client), built only when a metrics listener is configured or a
// scrape is rendered (metrics.ts): its counters copy metrics.ts's plain counts at scrape time, and
// its gauges read their value then. Building it starts prom-client's default process metrics.
import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";
import type { AppContext } from "../boot/context.ts";
import type { HotPathHistogram } from "./metrics-histogram.ts";

/**
 * What the scrape-time gauges read that belongs to another layer, handed in by the composition root
 * (main.ts), so that metrics reach into no other module (the bus, the database).
 */
export interface MetricsSources {
  outboxBacklog(): Promise<number>;
  /** Outbound deliveries waiting, and the age of the oldest due one (services/outbound/delivery-queue.ts). */
  deliveryBacklog?(): Promise<{ pending: number; lagSeconds: number | null }>;
}

/** metrics.ts's counts, as the registry reads them. */
export interface Counted {
  tokenChecks: Record<string, number>;
  tokenCacheLookups: Record<string, number>;
  /** By result and backend, keyed `result\0backend`. */
  logins: Map<string, number>;
  mfa: Map<string, number>;
  busPublishFailures: number;
  outboundDeliveries: Map<string, number>;
}

export interface MetricsRegistry {
  registry: Registry;
  /** Binds the scrape-time gauges to `app` (the process serves one). */
  bind(app: AppContext, from: MetricsSources): void;
}

export function createRegistry(counts: Counted, histograms: HotPathHistogram<string>[]): MetricsRegistry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "tessera_" });
  // The hot-path histograms implement prom-client's metric interface (metrics-histogram.ts).
  for (const histogram of histograms) registry.registerMetric(histogram as never);
  /** A counter whose series are read from `read()` (label values → count) at each scrape. */
  const scrapedCounter = (name: string, help: string, labels: string[], read: () => Iterable<[string[], number]>) =>
    new Counter({
      name,
      help,
      labelNames: labels,
      registers: [registry],
      collect() {
        this.reset();
        for (const [values, n] of read())
          this.inc(Object.fromEntries(labels.map((label, i) => [label, values[i]!])), n);
      },
    });
  const entries = (record: Record<string, number>) =>
    Object.entries(record).map(([k, n]): [string[], number] => [[k], n]);

  scrapedCounter(
    "tessera_token_checks_total",
    "Token checks (HEAD/GET /token/{token}, scopes/check) by result",
    ["result"],
    () => entries(counts.tokenChecks),
  );
  scrapedCounter(
    "tessera_token_cache_lookups_total",
    "In-memory token cache lookups by result (hit ratio: hit / (hit + miss))",
    ["result"],
    () => entries(counts.tokenCacheLookups),
  );
  scrapedCounter(
    "tessera_logins_total",
    "Logins (POST /token) by result and by the identity provider (backend) that handled them",
    ["result", "backend"],
    () => [...counts.logins].map(([key, n]): [string[], number] => [key.split("\0"), n]),
  );
  scrapedCounter(
    "tessera_mfa_total",
    "Multi-factor authentication outcomes: logins asked for a code, codes accepted or refused, recovery codes used, factors enrolled or removed, restricted (enrol-only) logins, passkey assertions accepted or refused",
    ["outcome"],
    () => [...counts.mfa].map(([outcome, n]): [string[], number] => [[outcome], n]),
  );
  scrapedCounter(
    "tessera_bus_publish_failures_total",
    "Interrupted deliveries of the event outbox to the message bus (each is retried)",
    [],
    () => [[[], counts.busPublishFailures]],
  );
  scrapedCounter(
    "tessera_outbound_deliveries_total",
    "Outbound delivery attempts (webhooks, back-channel logout) by kind and outcome: delivered, failed (retried), gave_up, dropped",
    ["kind", "outcome"],
    () => [...counts.outboundDeliveries].map(([key, n]): [string[], number] => [key.split("\0"), n]),
  );

  /** The application the scrape-time gauges read. */
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
    name: "tessera_outbound_deliveries_pending",
    help: "Outbound deliveries (webhooks, back-channel logout) waiting to be delivered, retries included",
    registers: [registry],
    async collect() {
      const backlog = await sources?.deliveryBacklog?.().catch(() => null);
      if (sources?.deliveryBacklog) this.set(backlog ? backlog.pending : Number.NaN);
    },
  });

  new Gauge({
    name: "tessera_outbound_delivery_lag_seconds",
    help: "Age of the oldest outbound delivery that is due (0 when none waits)",
    registers: [registry],
    async collect() {
      const backlog = await sources?.deliveryBacklog?.().catch(() => null);
      if (sources?.deliveryBacklog) this.set(backlog ? (backlog.lagSeconds ?? 0) : Number.NaN);
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

  return {
    registry,
    bind(app, from) {
      current = app;
      sources = from;
    },
  };
}
