// The worker of the outbound delivery queue (delivery-queue.ts): one per instance, with or without AMQP. It
// claims due deliveries (FOR UPDATE SKIP LOCKED, so instances share the work), sends each through
// `outboundFetch` with at most `outbound_delivery.concurrency` in flight (and `per_owner_concurrency` per owner:
// a hanging receiver holds a few slots for `outbound_http.timeout_ms` at most, never the others), and retries
// failures with exponential back-off and full jitter. It wakes on the queue's NOTIFY (delivered on commit, any
// instance), at once for a transaction of its own process, and polls every `poll_seconds` anyway.
import type { AppContext } from "../../boot/context.ts";
import { errorFields } from "../../observe/log.ts";
import { recordOutboundDelivery } from "../../observe/metrics.ts";
import {
  announceDeliveryListener,
  type AttemptOutcome,
  claimDeliveries,
  type Delivery,
  deliveryBacklog,
  deliveryKind,
  finishDelivery,
  onLocalEnqueue,
  pruneDeliveries,
  recordOwnerAttempt,
  releaseDelivery,
  retryDelivery,
  withdrawDeliveryListener,
} from "./delivery-queue.ts";
import { outboundFetch, outboundPolicy, type Lookup } from "./fetch.ts";

const LISTENER_REFRESH_MS = 60_000;
const PRUNE_EVERY_MS = 60_000;
/** A kind no handler of this instance knows (a rolling upgrade): left for another instance for this long. */
const UNKNOWN_KIND_DELAY_MS = 60_000;

/**
 * The wait before attempt `attempt + 1` after `attempt` failed: `initial · 2^(attempt-1)`, at most `max`, with
 * full jitter in its upper half (between half and all of it), so receivers coming back are not stampeded.
 */
export function retryDelayMs(attempt: number, initialSeconds: number, maxSeconds: number, random = Math.random()) {
  const ceiling = Math.min(maxSeconds, initialSeconds * 2 ** Math.min(Math.max(attempt - 1, 0), 40)) * 1000;
  return Math.round(ceiling / 2 + (random * ceiling) / 2);
}

export class DeliveryWorker {
  readonly instanceId = `delivery-${crypto.randomUUID()}`;
  private running = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private woken = false;
  private inFlight = new Set<Promise<void>>();
  private lastPrune = 0;

  constructor(
    private readonly app: AppContext,
    /** Tests resolve names their own way; the service uses the system's resolver. */
    private readonly lookup?: Lookup,
  ) {}

  private get settings() {
    return this.app.config.outbound_delivery;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Look for due deliveries now. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** Stops claiming, and waits for the deliveries in flight (each bounded by the outbound timeout). */
  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    await this.loop;
    await Promise.allSettled([...this.inFlight]);
  }

  async status(): Promise<{ status: string } & Record<string, unknown>> {
    const backlog = await deliveryBacklog(this.app).catch(() => null);
    return {
      status: "ok",
      pending: backlog?.pending ?? null,
      lag_seconds: backlog?.lagSeconds == null ? null : Math.floor(backlog.lagSeconds),
      in_flight: this.inFlight.size,
    };
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.woken = false;
      try {
        const free = this.settings.concurrency - this.inFlight.size;
        if (free > 0) {
          const batch = await claimDeliveries(
            this.app,
            this.instanceId,
            free,
            this.settings.per_owner_concurrency,
            this.leaseSeconds(),
          );
          for (const delivery of batch) this.track(this.attempt(delivery));
          if (batch.length === free) continue; // more may be due
        }
        if (Date.now() - this.lastPrune > PRUNE_EVERY_MS) {
          this.lastPrune = Date.now();
          await pruneDeliveries(this.app, this.settings.retention_days * 86_400);
        }
      } catch (e) {
        if (!this.running) break;
        this.app.log.warn("outbound delivery: cannot claim deliveries", errorFields(e));
      }
      await this.sleep(this.settings.poll_seconds * 1000);
    }
  }

  /** Long enough for a prepare and the whole call; past it, another instance may take the delivery. */
  private leaseSeconds(): number {
    return Math.ceil(this.app.config.outbound_http.timeout_ms / 1000) + 30;
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    p.finally(() => {
      this.inFlight.delete(p);
      this.wake(); // a slot is free, and the owner's next delivery may be due
    });
  }

  private sleep(ms: number): Promise<void> {
    if (this.woken || !this.running) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.wakeUp = null;
        resolve();
      }
      this.wakeUp = done;
    });
  }

  /** One attempt of one delivery; never throws (a failure to record is logged, the lease brings it back). */
  private async attempt(delivery: Delivery): Promise<void> {
    const { app, instanceId } = this;
    try {
      const kind = deliveryKind(delivery.kind);
      if (!kind) {
        await releaseDelivery(app, instanceId, delivery.seq, new Date(Date.now() + UNKNOWN_KIND_DELAY_MS));
        return;
      }
      let request: Awaited<ReturnType<typeof kind.prepare>>;
      try {
        request = await kind.prepare(delivery.payload, { attempt: delivery.attempts, deliveryId: delivery.id, app });
      } catch (e) {
        await this.failed(delivery, { statusCode: null, error: `prepare: ${(e as Error).message}`, latencyMs: null });
        return;
      }
      if (!request) {
        await finishDelivery(app, instanceId, delivery.seq, "dropped", {
          statusCode: null,
          error: null,
          latencyMs: null,
        });
        recordOutboundDelivery(delivery.kind, "dropped");
        return;
      }
      const started = performance.now();
      let outcome: AttemptOutcome;
      try {
        const response = await outboundFetch(
          request.url,
          { method: "POST", headers: request.headers, body: request.body },
          outboundPolicy(app.config.outbound_http),
          this.lookup,
        );
        const latencyMs = Math.round(performance.now() - started);
        const ok = response.status >= 200 && response.status < 300;
        outcome = { statusCode: response.status, error: ok ? null : `answered ${response.status}`, latencyMs };
      } catch (e) {
        outcome = { statusCode: null, error: (e as Error).message, latencyMs: Math.round(performance.now() - started) };
      }
      if (outcome.error === null) {
        await finishDelivery(app, instanceId, delivery.seq, "delivered", outcome);
        recordOutboundDelivery(delivery.kind, "delivered");
        await recordOwnerAttempt(app, delivery.kind, delivery.ownerKey, true);
        await kind.onDelivered?.(delivery, { app });
      } else {
        await this.failed(delivery, outcome);
      }
    } catch (e) {
      app.log.warn("outbound delivery: could not record an attempt", { delivery_id: delivery.id, ...errorFields(e) });
    }
  }

  private async failed(delivery: Delivery, outcome: AttemptOutcome): Promise<void> {
    const { app, instanceId } = this;
    const kind = deliveryKind(delivery.kind);
    const s = this.settings;
    const deadline = delivery.createdAt.getTime() + s.max_age_seconds * 1000;
    const failed = { ...delivery, lastStatusCode: outcome.statusCode, lastError: outcome.error };
    if (Date.now() >= deadline) {
      await finishDelivery(app, instanceId, delivery.seq, "failed", outcome);
      recordOutboundDelivery(delivery.kind, "gave_up");
      app.log.warn("outbound delivery given up", {
        kind: delivery.kind,
        delivery_id: delivery.id,
        attempts: delivery.attempts,
        error: outcome.error,
      });
      await kind?.onGaveUp?.(failed, { app });
    } else {
      const wait = retryDelayMs(delivery.attempts, s.retry_initial_seconds, s.retry_max_interval_seconds);
      await retryDelivery(app, instanceId, delivery.seq, new Date(Math.min(Date.now() + wait, deadline)), outcome);
      recordOutboundDelivery(delivery.kind, "failed");
    }
    const streak = await recordOwnerAttempt(app, delivery.kind, delivery.ownerKey, false);
    if (streak) await kind?.onAttemptFailed?.(failed, streak, { app });
  }
}

/** Start-up hook: the worker of this instance, its NOTIFY subscription and its `/status` entry. */
export async function startDeliveryWorker(app: AppContext, lookup?: Lookup): Promise<DeliveryWorker> {
  const worker = new DeliveryWorker(app, lookup);
  app.statusProviders.push({ name: "outbound_delivery", status: () => worker.status() });
  const unlisten = await app.database.listen("tessera_delivery", () => worker.wake());
  const stopLocal = onLocalEnqueue(() => worker.wake());
  const announce = () =>
    announceDeliveryListener(app, worker.instanceId).catch((e) =>
      app.log.warn("could not announce the delivery worker (deliveries wait for its poll)", errorFields(e)),
    );
  await announce();
  const beat = setInterval(announce, LISTENER_REFRESH_MS);
  beat.unref?.();
  worker.start();
  app.onClose.push(async function stopDeliveryWorker() {
    clearInterval(beat);
    stopLocal();
    await worker.stop();
    await withdrawDeliveryListener(app, worker.instanceId).catch(() => undefined);
  });
  // Closed first (hooks run newest first), under its own name (`unlisten tessera_delivery`): a shutdown that
  // gives up on a frozen database names it among what it abandoned.
  app.onClose.push(unlisten);
  return worker;
}
