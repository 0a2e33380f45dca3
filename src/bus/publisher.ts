// Delivers the transactional outbox to AMQP (wazo-auth's bus events): exchange `amqp.exchange_name`
// of type `amqp.exchange_type`, publisher confirms, reconnection with exponential backoff. A row
// is marked published only once the broker confirmed it (at least once). The broker being down
// never fails a request: events wait in the outbox.
import type amqp from "amqplib";
import type { AppContext } from "../boot/context.ts";
import {
  announceListener,
  claimBatch,
  markPublished,
  outboxBacklog,
  outboxPending,
  releaseClaims,
  type OutboxRow,
  withdrawListener,
} from "./outbox.ts";
import { recordBusPublishFailure } from "../observe/metrics.ts";
import { errorFields } from "../observe/log.ts";

const POLL_MS = 1000;
/** How often a publisher renews its announcement (the trigger forgets one after two minutes). */
const LISTENER_REFRESH_MS = 60_000;
// Reconnection waits 0.5 s, doubling to 30 s, back to 0.5 s after a delivered batch: three lines
// of the loop below. Kept by hand: retry libraries (p-retry, exponential-backoff) retry one call
// until it succeeds, while this loop runs until stop(), resets on success and sleeps interruptibly.
const MAX_BACKOFF_MS = 30_000;

interface Link {
  connection: amqp.ChannelModel;
  channel: amqp.ConfirmChannel;
  /** Rejects when the connection drops, so a wait for confirms never hangs on a dead link. */
  closed: Promise<never>;
}

const CONFIRM_TIMEOUT_MS = 10_000;

export class BusPublisher {
  readonly instanceId = crypto.randomUUID();
  private link: Link | null = null;
  private running = false;
  private wake: (() => void) | null = null;
  private backoffMs = 500;
  private lastError: string | null = null;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly app: AppContext,
    private readonly amqpConfig: NonNullable<AppContext["config"]["amqp"]>,
  ) {}

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  /** Wake the loop now (new rows were recorded). */
  notify(): void {
    this.wake?.();
  }

  get connected(): boolean {
    return this.link !== null;
  }

  async stop(): Promise<void> {
    this.running = false;
    this.notify();
    await this.loop;
    await this.disconnect();
  }

  /**
   * `fail` while disconnected; `degraded` while connected but the oldest unpublished event is older
   * than `degraded_after_seconds` (a broker that accepts the connection but confirms nothing, or a
   * publisher that cannot keep up); else `ok`.
   */
  async status(): Promise<{ status: string } & Record<string, unknown>> {
    const pending = await outboxPending(this.app).catch(() => null);
    const oldest = pending?.oldestSeconds ?? null;
    const late = oldest !== null && oldest > this.amqpConfig.degraded_after_seconds;
    return {
      status: !this.link ? "fail" : late ? "degraded" : "ok",
      exchange: this.amqpConfig.exchange_name,
      outbox_backlog: pending?.backlog ?? null,
      oldest_pending_seconds: oldest === null ? null : Math.floor(oldest),
      ...(this.lastError && !this.link ? { error: this.lastError } : {}),
    };
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.connect();
        let sent: number;
        do sent = await this.publishBatch();
        while (sent > 0 && this.running);
        this.backoffMs = 500;
        await this.sleep(POLL_MS);
      } catch (e) {
        this.lastError = (e as Error).message;
        recordBusPublishFailure();
        this.app.log.warn("bus publisher: delivery interrupted", {
          error: this.lastError,
          retry_in_ms: this.backoffMs,
        });
        await this.disconnect();
        await releaseClaims(this.app, this.instanceId).catch(() => {});
        await this.sleep(this.backoffMs, false);
        this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
      }
    }
  }

  private async connect(): Promise<void> {
    if (this.link) return;
    const { default: amqplib } = await import("amqplib"); // loaded only where a broker is configured
    const connection = await amqplib.connect(this.amqpConfig.uri);
    connection.on("error", () => {});
    let onClose: (e: Error) => void = () => {};
    const closed = new Promise<never>((_, reject) => (onClose = reject));
    closed.catch(() => {});
    connection.on("close", () => {
      if (this.link?.connection === connection) this.link = null;
      onClose(new Error("connection to the broker closed"));
      this.notify();
    });
    const channel = await connection.createConfirmChannel();
    channel.on("error", () => {});
    await channel.assertExchange(this.amqpConfig.exchange_name, this.amqpConfig.exchange_type, { durable: true });
    this.link = { connection, channel, closed };
    this.lastError = null;
    this.app.log.info("bus publisher connected", { exchange: this.amqpConfig.exchange_name });
  }

  private async disconnect(): Promise<void> {
    const link = this.link;
    this.link = null;
    if (link) await link.connection.close().catch(() => {});
  }

  /** Claims a batch and publishes it in order; returns how many rows went out. */
  private async publishBatch(): Promise<number> {
    const link = this.link;
    if (!link) throw new Error("not connected");
    const rows = await claimBatch(this.app, this.instanceId);
    if (rows.length === 0) return 0;
    for (const row of rows) this.publish(link.channel, row);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>(
      (_, reject) => (timer = setTimeout(() => reject(new Error("no publisher confirms in time")), CONFIRM_TIMEOUT_MS)),
    );
    try {
      await Promise.race([link.channel.waitForConfirms(), link.closed, timeout]);
    } finally {
      clearTimeout(timer);
    }
    await markPublished(
      this.app,
      this.instanceId,
      rows.map((r) => r.id),
    );
    return rows.length;
  }

  private publish(channel: amqp.ConfirmChannel, row: OutboxRow): void {
    channel.publish(this.amqpConfig.exchange_name, row.routing_key, Buffer.from(JSON.stringify(row.payload)), {
      headers: row.headers,
      contentType: "application/json",
      persistent: true,
      messageId: String(row.id),
    });
  }

  /** Waits `ms`; new events cut the wait short unless backing off (only stop() does then). */
  private sleep(ms: number, wakeOnEvents = true): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = wakeOnEvents ? done : () => (this.running ? undefined : done());
    });
  }
}

/** Start-up hook: a publisher when `amqp` is configured, else `/status` says the bus is disabled. */
export async function startBus(app: AppContext): Promise<void> {
  const config = app.config.amqp;
  if (!config) {
    app.statusProviders.push({
      name: "bus_publisher",
      status: async () => ({ status: "disabled", outbox_backlog: await outboxBacklog(app).catch(() => null) }),
    });
    return;
  }
  const publisher = new BusPublisher(app, config);
  app.statusProviders.push({ name: "bus_publisher", status: () => publisher.status() });
  const unlisten = await app.database.listen("tessera_outbox", () => publisher.notify());
  // Writers notify only while a publisher says it listens (migration 0027); it polls anyway.
  const announce = () =>
    announceListener(app, publisher.instanceId).catch((e) =>
      app.log.warn("could not announce the bus publisher (events wait for its poll)", errorFields(e)),
    );
  await announce();
  const beat = setInterval(announce, LISTENER_REFRESH_MS);
  beat.unref?.();
  publisher.start();
  app.onClose.push(async function stopBusPublisher() {
    clearInterval(beat);
    await withdrawListener(app, publisher.instanceId).catch(() => undefined); // forgotten in two minutes anyway
    await unlisten();
    await publisher.stop();
  });
}
