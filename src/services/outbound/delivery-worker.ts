// The worker of the outbound delivery queue (delivery-queue.ts): one per instance, with or without AMQP. A
// continuous pipeline: it claims due deliveries (FOR UPDATE SKIP LOCKED, so instances share the work) as soon
// as slots are free — at most `outbound_delivery.concurrency` in flight, and `per_owner_concurrency` per owner,
// so a hanging receiver holds a few slots for `outbound_http.timeout_ms` at most, never the others —, prepares
// each claimed batch with one read per kind, sends each delivery through `outboundFetch` (keep-alive
// connections, pooled per host by the runtime), and records the results of the deliveries that ended meanwhile
// in one statement (plus one for the owners' failure streaks), then claims again. Failures are retried with
// exponential back-off and full jitter. It wakes on the queue's NOTIFY (delivered on commit, any instance), at
// once for a transaction of its own process, and polls every `poll_seconds` anyway.
import type { AppContext } from "../../boot/context.ts";
import { errorFields } from "../../observe/log.ts";
import { recordOutboundDelivery } from "../../observe/metrics.ts";
import {
  announceDeliveryListener,
  type AttemptOutcome,
  claimDeliveries,
  type Delivery,
  type DeliveryKind,
  type DeliveryRequest,
  type DeliveryResult,
  deliveryBacklog,
  deliveryKind,
  onLocalEnqueue,
  type OwnerAttempts,
  type OwnerStreak,
  pruneDeliveries,
  recordDeliveryResults,
  recordOwnerAttempts,
  withdrawDeliveryListener,
} from "./delivery-queue.ts";
import { type Lookup, type OutboundPolicy, outboundFetch, outboundPolicy } from "./fetch.ts";

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

/**
 * The lease of a claimed delivery: the outbound timeout (the call, connection to last byte, never outlasts it)
 * plus a margin of half of it and 5 s for the batch's prepare and the recording of its result on a loaded
 * database. Past it, another instance may take the delivery (at least once: the receiver may then see it twice,
 * with the same `webhook-id`).
 */
export function leaseSeconds(timeoutMs: number): number {
  return Math.ceil((timeoutMs * 1.5) / 1000) + 5;
}

/** A delivery whose attempt has ended, waiting for its result to be recorded. */
interface Ended {
  delivery: Delivery;
  result: DeliveryResult;
  /** The attempt's outcome for its owner's streak (true: a success); absent when nothing was attempted. */
  ok?: boolean;
  /** What to tell once recorded (metrics, the kind's hooks). */
  after?: () => Promise<void>;
}

export class DeliveryWorker {
  readonly instanceId = `delivery-${crypto.randomUUID()}`;
  private running = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private woken = false;
  /** Claimed by this worker and not yet recorded: the slots in use. */
  private claimed = 0;
  private attempts = new Set<Promise<void>>();
  private ended: Ended[] = [];
  private flushing: Promise<void> | null = null;
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

  /** Stops claiming, waits for the deliveries in flight (each bounded by the outbound timeout), records them. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    await this.loop;
    while (this.attempts.size > 0 || this.flushing) {
      await Promise.allSettled([...this.attempts]);
      await this.flushing;
    }
    await this.flush();
  }

  async status(): Promise<{ status: string } & Record<string, unknown>> {
    const backlog = await deliveryBacklog(this.app).catch(() => null);
    return {
      status: "ok",
      pending: backlog?.pending ?? null,
      lag_seconds: backlog?.lagSeconds == null ? null : Math.floor(backlog.lagSeconds),
      in_flight: this.claimed,
    };
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.woken = false;
      try {
        const free = this.settings.concurrency - this.claimed;
        // A busy worker claims once a quarter of its slots are free (each recording wakes it), not once per
        // ended delivery: a claim costs about the same for 1 row as for 40.
        if (free > 0 && (this.claimed === 0 || free * 4 >= this.settings.concurrency)) {
          const batch = await claimDeliveries(
            this.app,
            this.instanceId,
            free,
            this.settings.per_owner_concurrency,
            leaseSeconds(this.app.config.outbound_http.timeout_ms),
          );
          this.claimed += batch.length;
          if (batch.length > 0) this.track(this.send(batch));
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

  private track(p: Promise<void>): void {
    this.attempts.add(p);
    p.finally(() => this.attempts.delete(p));
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

  /** Prepares a claimed batch (one call per kind) and sends each delivery; never throws. */
  private async send(batch: Delivery[]): Promise<void> {
    const byKind = new Map<string, Delivery[]>();
    for (const d of batch) {
      const same = byKind.get(d.kind);
      if (same) same.push(d);
      else byKind.set(d.kind, [d]);
    }
    await Promise.all(
      [...byKind].map(async ([name, deliveries]) => {
        const kind = deliveryKind(name);
        if (!kind) {
          const at = new Date(Date.now() + UNKNOWN_KIND_DELAY_MS);
          for (const delivery of deliveries)
            this.end({ delivery, result: { seq: delivery.seq, status: "release", at } });
          return;
        }
        const requests = await this.prepare(kind, deliveries);
        const policy = outboundPolicy(this.app.config.outbound_http); // parsed once a batch
        await Promise.all(deliveries.map((d, i) => this.attempt(kind, d, requests[i]!, policy)));
      }),
    );
  }

  /** Each delivery's request, null (drop it), or the error that prevented preparing it. */
  private async prepare(kind: DeliveryKind, deliveries: Delivery[]): Promise<(DeliveryRequest | null | Error)[]> {
    const { app } = this;
    const items = deliveries.map((d) => ({ payload: d.payload, ctx: { attempt: d.attempts, deliveryId: d.id, app } }));
    if (kind.prepareMany) {
      try {
        return await kind.prepareMany(items);
      } catch (e) {
        return deliveries.map(() => e as Error);
      }
    }
    return Promise.all(items.map((i) => kind.prepare(i.payload, i.ctx).catch((e: Error) => e)));
  }

  /** One attempt of one delivery; never throws. */
  private async attempt(
    kind: DeliveryKind,
    delivery: Delivery,
    request: DeliveryRequest | null | Error,
    policy: OutboundPolicy,
  ) {
    const { app } = this;
    if (request instanceof Error) {
      this.failed(kind, delivery, { statusCode: null, error: `prepare: ${request.message}`, latencyMs: null });
      return;
    }
    if (!request) {
      const outcome = { statusCode: null, error: null, latencyMs: null };
      this.end({
        delivery,
        result: { seq: delivery.seq, status: "dropped", outcome },
        after: async () => void recordOutboundDelivery(delivery.kind, "dropped"),
      });
      return;
    }
    const started = performance.now();
    let outcome: AttemptOutcome;
    try {
      const response = await outboundFetch(
        request.url,
        { method: "POST", headers: request.headers, body: request.body },
        policy,
        this.lookup,
      );
      const latencyMs = Math.round(performance.now() - started);
      const ok = response.status >= 200 && response.status < 300;
      outcome = { statusCode: response.status, error: ok ? null : `answered ${response.status}`, latencyMs };
    } catch (e) {
      outcome = { statusCode: null, error: (e as Error).message, latencyMs: Math.round(performance.now() - started) };
    }
    if (outcome.error === null) {
      this.end({
        delivery,
        result: { seq: delivery.seq, status: "delivered", outcome },
        ok: true,
        after: async () => {
          recordOutboundDelivery(delivery.kind, "delivered");
          await kind.onDelivered?.(delivery, { app });
        },
      });
    } else {
      this.failed(kind, delivery, outcome);
    }
  }

  private failed(kind: DeliveryKind, delivery: Delivery, outcome: AttemptOutcome): void {
    const { app } = this;
    const s = this.settings;
    const deadline = delivery.createdAt.getTime() + s.max_age_seconds * 1000;
    const failed = { ...delivery, lastStatusCode: outcome.statusCode, lastError: outcome.error };
    if (Date.now() >= deadline) {
      this.end({
        delivery: failed,
        result: { seq: delivery.seq, status: "failed", outcome },
        ok: false,
        after: async () => {
          recordOutboundDelivery(delivery.kind, "gave_up");
          app.log.warn("outbound delivery given up", {
            kind: delivery.kind,
            delivery_id: delivery.id,
            attempts: delivery.attempts,
            error: outcome.error,
          });
          await kind.onGaveUp?.(failed, { app });
        },
      });
    } else {
      const wait = retryDelayMs(delivery.attempts, s.retry_initial_seconds, s.retry_max_interval_seconds);
      const at = new Date(Math.min(Date.now() + wait, deadline));
      this.end({
        delivery: failed,
        result: { seq: delivery.seq, status: "retry", at, outcome },
        ok: false,
        after: async () => void recordOutboundDelivery(delivery.kind, "failed"),
      });
    }
  }

  /** An attempt ended: its result joins the next recording (at once when none is under way). */
  private end(ended: Ended): void {
    this.ended.push(ended);
    if (!this.flushing) this.flushing = this.flush().finally(() => (this.flushing = null));
  }

  /**
   * Records every ended attempt in two statements (results, owners' streaks), then runs their hooks and frees
   * their slots. A failure to record is logged: the rows stay leased to this instance and come back when the
   * lease ends (at least once).
   */
  private async flush(): Promise<void> {
    while (this.ended.length > 0) {
      const batch = this.ended;
      this.ended = [];
      const { app, instanceId } = this;
      let streaks = new Map<string, OwnerStreak>();
      try {
        await recordDeliveryResults(
          app,
          instanceId,
          batch.map((e) => e.result),
        );
        const owners = new Map<string, OwnerAttempts>();
        for (const e of batch) {
          if (e.ok === undefined) continue;
          const o = owners.get(e.delivery.ownerKey) ?? {
            kind: e.delivery.kind,
            ownerKey: e.delivery.ownerKey,
            outcomes: [],
          };
          o.outcomes.push(e.ok);
          owners.set(o.ownerKey, o);
        }
        streaks = await recordOwnerAttempts(app, [...owners.values()]);
      } catch (e) {
        app.log.warn("outbound delivery: could not record attempts", { deliveries: batch.length, ...errorFields(e) });
        this.claimed -= batch.length;
        continue;
      }
      this.claimed -= batch.length;
      this.wake(); // slots are free, and the next delivery of each ordering key may be due
      // Not awaited: a slow hook (a mail to the administrators) holds back no later recording.
      this.track(this.afterRecorded(batch, streaks));
    }
  }

  private async afterRecorded(batch: Ended[], streaks: Map<string, OwnerStreak>) {
    const { app } = this;
    // One failure-streak report per owner, with its last failed delivery (the kind disables the owner on it).
    const lastFailed = new Map<string, Delivery>();
    for (const e of batch) if (e.ok === false) lastFailed.set(e.delivery.ownerKey, e.delivery);
    const hooks = batch.map((e) => e.after?.());
    for (const [ownerKey, delivery] of lastFailed) {
      const streak = streaks.get(ownerKey);
      const kind = deliveryKind(delivery.kind);
      if (streak && kind?.onAttemptFailed) hooks.push(kind.onAttemptFailed(delivery, streak, { app }));
    }
    for (const r of await Promise.allSettled(hooks)) {
      if (r.status === "rejected") app.log.warn("outbound delivery: a hook failed", errorFields(r.reason));
    }
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
