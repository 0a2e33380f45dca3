// Webhook subscriptions (docs/webhooks.md): per tenant, like groups. A webhook receives the bus events
// (docs/events.md) its `events` name — exactly, or by a prefix ending in `*` — whose tenant is its own or one of
// its sub-tenants: the outbox's trigger (migration 0034) turns each such event into a delivery in the
// transaction that records it. The signing secret is shown once, at creation or rotation; after a rotation the
// previous one keeps signing for `webhooks.secret_grace_seconds`.
import { and, asc, desc, eq, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { outboundDeliveries, webhooks } from "../../db/schema.ts";
import { listPage } from "../../db/paging.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { collection, type Collection, type ListParams } from "../../domain/collection.ts";
import { InvalidData, invalidField, NotFound, orAbsent } from "../../domain/errors.ts";
import { changesOf, recordAudit, secretChange, type AuditEntry } from "../audit/record.ts";
import { publishEvent, routingKey } from "../events.ts";
import { inCallerScope, tenantVisible } from "../identity/visibility.ts";
import { enqueueDelivery, resetOwner } from "../outbound/delivery-queue.ts";
import { outboundPolicy, urlRefusal } from "../outbound/fetch.ts";
import { newWebhookSecret } from "./signature.ts";

export type WebhookRow = typeof webhooks.$inferSelect;

/** The delivery kind of webhooks in the outbound queue (delivery.ts). */
export const WEBHOOK_KIND = "webhook";

export interface WebhookJson {
  uuid: string;
  tenant_uuid: string;
  url: string;
  description: string;
  events: string[];
  enabled: boolean;
  disabled_reason: string | null;
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const webhookJson = (w: WebhookRow): WebhookJson => ({
  uuid: w.uuid,
  tenant_uuid: w.tenantUuid,
  url: w.url,
  description: w.description,
  events: w.events,
  enabled: w.enabled,
  disabled_reason: w.disabledReason,
  previous_secret_expires_at:
    w.previousSecretExpiresAt && w.previousSecretExpiresAt.getTime() > Date.now()
      ? iso(w.previousSecretExpiresAt)
      : null,
  created_at: w.createdAt.toISOString(),
  updated_at: w.updatedAt.toISOString(),
});

export interface WebhookInput {
  url: string;
  events: string[];
  description?: string;
  enabled?: boolean;
}

export type WebhookFilter = "url" | "enabled";
const SORT = { created_at: webhooks.createdAt, url: webhooks.url } as const;

/** 400 when the URL may not be called (scheme, credentials, a private address written in it). */
function checkUrl(app: AppContext, url: string): void {
  const refusal = urlRefusal(url, outboundPolicy(app.config.outbound_http));
  if (refusal) throw invalidField("webhooks", "url", "outbound_url", url, `url ${refusal}`);
}

export async function listWebhooks(
  app: AppContext,
  caller: Caller,
  params: ListParams<WebhookFilter>,
): Promise<Collection<WebhookJson>> {
  const base = inCallerScope(app, caller, params.recurse, webhooks.tenantUuid);
  const conditions: SQL[] = [];
  const f = params.filters;
  if (f.url !== undefined) conditions.push(eq(webhooks.url, f.url));
  if (f.enabled !== undefined)
    conditions.push(eq(webhooks.enabled, ["true", "1", "yes", "on"].includes(f.enabled.toLowerCase())));
  const where = conditions.length ? and(base, ...conditions) : base;
  const column = SORT[(params.order ?? "created_at") as keyof typeof SORT] ?? webhooks.createdAt;
  const page = await listPage(
    app.db,
    webhooks,
    base,
    where,
    [params.direction === "desc" ? desc(column) : asc(column), asc(webhooks.uuid)],
    params,
  );
  return collection(page.rows.map(webhookJson), page.filtered, page.total);
}

/** The webhook when it belongs to the caller's scoping tenant or below, else 404. */
export async function requireVisibleWebhook(
  app: AppContext,
  caller: Caller,
  uuid: string,
  db: DbOrTx = app.db,
): Promise<WebhookRow> {
  const [w] = await db.select().from(webhooks).where(eq(webhooks.uuid, uuid));
  if (!w || !(await tenantVisible(app, caller, w.tenantUuid, db))) throw new NotFound("webhooks", uuid);
  return w;
}

/** A bus event about a webhook (never its secret nor its URL, which may carry a receiver's token). */
export function webhookEvent(app: AppContext, tx: DbOrTx, action: string, w: WebhookRow) {
  return publishEvent(app, tx, {
    name: `auth_webhook_${action}`,
    routingKey: routingKey(`auth.webhooks.{webhook_uuid}.${action}`, { webhook_uuid: w.uuid }),
    data: {
      uuid: w.uuid,
      tenant_uuid: w.tenantUuid,
      events: w.events,
      enabled: w.enabled,
      ...(w.disabledReason ? { disabled_reason: w.disabledReason } : {}),
    },
    tenantUuid: w.tenantUuid,
    userUuid: "*",
    aggregate: `webhook:${w.uuid}`,
  });
}

export function webhookAudit(
  action: string,
  w: WebhookRow,
  after: Record<string, unknown> | null,
  before: Record<string, unknown> | null = null,
): AuditEntry {
  return {
    action,
    target: { kind: "webhook", uuid: w.uuid, tenantUuid: w.tenantUuid },
    changes: changesOf(before, after),
  };
}

const audited = (w: WebhookRow) => ({
  url: w.url,
  events: w.events,
  description: w.description,
  enabled: w.enabled,
});

export async function createWebhook(
  app: AppContext,
  caller: Caller,
  input: WebhookInput,
): Promise<WebhookJson & { secret: string }> {
  const tenantUuid = caller.tenantUuid;
  if (!tenantUuid) throw new NotFound("tenants");
  checkUrl(app, input.url);
  const secret = newWebhookSecret();
  return inTransaction(app, async (tx) => {
    const [count] = await tx
      .select({ n: sql<number>`count(*)::int` })
      .from(webhooks)
      .where(eq(webhooks.tenantUuid, tenantUuid));
    const max = app.config.webhooks.max_per_tenant;
    if ((count?.n ?? 0) >= max)
      throw new InvalidData(
        "webhooks",
        {
          tenant_uuid: { constraint_id: "max", constraint: max, message: `A tenant may have at most ${max} webhooks` },
        },
        `A tenant may have at most ${max} webhooks`,
      );
    const [row] = await tx
      .insert(webhooks)
      .values({
        tenantUuid,
        url: input.url,
        events: [...new Set(input.events)],
        description: input.description ?? "",
        enabled: input.enabled ?? true,
        secret,
      })
      .returning();
    await webhookEvent(app, tx, "created", row!);
    await recordAudit(app, tx, caller, {
      ...webhookAudit("webhook.create", row!, audited(row!)),
      changes: [...changesOf(null, audited(row!)), secretChange("secret")],
    });
    return { ...webhookJson(row!), secret };
  });
}

export async function updateWebhook(
  app: AppContext,
  caller: Caller,
  uuid: string,
  input: WebhookInput,
): Promise<WebhookJson> {
  checkUrl(app, input.url);
  return inTransaction(app, async (tx) => {
    const w = await requireVisibleWebhook(app, caller, uuid, tx);
    const enabled = input.enabled ?? w.enabled;
    const [row] = await tx
      .update(webhooks)
      .set({
        url: input.url,
        events: [...new Set(input.events)],
        description: input.description ?? w.description,
        enabled,
        // Enabled again by an administrator: the failure streak starts over.
        disabledReason: enabled ? null : w.disabledReason,
        updatedAt: new Date(),
      })
      .where(eq(webhooks.uuid, uuid))
      .returning();
    if (enabled && !w.enabled) await resetOwner(tx, uuid);
    await webhookEvent(app, tx, "updated", row!);
    await recordAudit(app, tx, caller, webhookAudit("webhook.update", row!, audited(row!), audited(w)));
    return webhookJson(row!);
  });
}

export async function deleteWebhook(app: AppContext, caller: Caller, uuid: string): Promise<void> {
  await inTransaction(app, async (tx) => {
    const w = await orAbsent(requireVisibleWebhook(app, caller, uuid, tx));
    if (!w) return; // absent or not visible: the desired state (D4 of docs/wazo-auth-differences.md)
    await tx.delete(webhooks).where(eq(webhooks.uuid, uuid));
    // Its pending deliveries and its log go with it.
    await tx
      .delete(outboundDeliveries)
      .where(and(eq(outboundDeliveries.kind, WEBHOOK_KIND), eq(outboundDeliveries.ownerKey, uuid)));
    await resetOwner(tx, uuid);
    await webhookEvent(app, tx, "deleted", w);
    await recordAudit(app, tx, caller, webhookAudit("webhook.delete", w, null, audited(w)));
  });
}

/** A new secret, shown once; the previous one keeps signing for the grace period. */
export async function rotateWebhookSecret(
  app: AppContext,
  caller: Caller,
  uuid: string,
): Promise<{ secret: string; previous_secret_expires_at: string | null }> {
  const secret = newWebhookSecret();
  const grace = app.config.webhooks.secret_grace_seconds;
  return inTransaction(app, async (tx) => {
    const w = await requireVisibleWebhook(app, caller, uuid, tx);
    const expires = grace > 0 ? new Date(Date.now() + grace * 1000) : null;
    await tx
      .update(webhooks)
      .set({
        secret,
        previousSecret: expires ? w.secret : null,
        previousSecretExpiresAt: expires,
        updatedAt: new Date(),
      })
      .where(eq(webhooks.uuid, uuid));
    await recordAudit(app, tx, caller, {
      action: "webhook.secret_rotate",
      target: { kind: "webhook", uuid: w.uuid, tenantUuid: w.tenantUuid },
      changes: [secretChange("secret")],
    });
    return { secret, previous_secret_expires_at: iso(expires) };
  });
}

export interface DeliveryJson {
  uuid: string;
  message_id: string | null;
  event_type: string | null;
  status: string;
  attempts: number;
  response_status_code: number | null;
  error: string | null;
  latency_ms: number | null;
  created_at: string;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  finished_at: string | null;
}

type DeliveryRow = typeof outboundDeliveries.$inferSelect;

export interface WebhookPayload {
  webhook_uuid: string;
  message_id: string;
  event: { type: string; timestamp: string; tenant_uuid: string | null; data: unknown };
}

const deliveryJson = (d: DeliveryRow): DeliveryJson => {
  const p = d.payload as Partial<WebhookPayload> | null;
  return {
    uuid: d.id,
    message_id: p?.message_id ?? null,
    event_type: p?.event?.type ?? null,
    status: d.status,
    attempts: d.attempts,
    response_status_code: d.lastStatusCode,
    error: d.lastError,
    latency_ms: d.lastLatencyMs,
    created_at: d.createdAt.toISOString(),
    last_attempt_at: iso(d.lastAttemptAt),
    next_attempt_at: d.status === "pending" ? iso(d.nextAttemptAt) : null,
    finished_at: iso(d.finishedAt),
  };
};

export type DeliveryFilter = "status" | "event_type";

/** The webhook's delivery log in the order recorded, `direction=desc` for the newest first (finished ones are kept `outbound_delivery.retention_days`). */
export async function listWebhookDeliveries(
  app: AppContext,
  caller: Caller,
  uuid: string,
  params: ListParams<DeliveryFilter>,
): Promise<Collection<DeliveryJson>> {
  await requireVisibleWebhook(app, caller, uuid);
  const base = and(eq(outboundDeliveries.kind, WEBHOOK_KIND), eq(outboundDeliveries.ownerKey, uuid))!;
  const conditions: SQL[] = [];
  if (params.filters.status !== undefined) conditions.push(eq(outboundDeliveries.status, params.filters.status));
  if (params.filters.event_type !== undefined)
    conditions.push(sql`${outboundDeliveries.payload}->'event'->>'type' = ${params.filters.event_type}`);
  const where = conditions.length ? and(base, ...conditions) : base;
  const page = await listPage(
    app.db,
    outboundDeliveries,
    base,
    where,
    [params.direction === "desc" ? desc(outboundDeliveries.seq) : asc(outboundDeliveries.seq)],
    params,
  );
  return collection(page.rows.map(deliveryJson), page.filtered, page.total);
}

/**
 * Sends a logged delivery again, as a new delivery with the same `webhook-id` (a receiver that got it
 * already can tell), signed afresh.
 */
export async function redeliver(
  app: AppContext,
  caller: Caller,
  uuid: string,
  deliveryUuid: string,
): Promise<{ uuid: string }> {
  return inTransaction(app, async (tx) => {
    const w = await requireVisibleWebhook(app, caller, uuid, tx);
    const [d] = await tx
      .select()
      .from(outboundDeliveries)
      .where(
        and(
          eq(outboundDeliveries.id, deliveryUuid),
          eq(outboundDeliveries.kind, WEBHOOK_KIND),
          eq(outboundDeliveries.ownerKey, uuid),
        ),
      );
    if (!d) throw new NotFound("webhook_deliveries", deliveryUuid);
    const id = await enqueueDelivery(tx, {
      kind: WEBHOOK_KIND,
      ownerKey: w.uuid,
      orderingKey: null,
      payload: d.payload,
      tenantUuid: w.tenantUuid,
    });
    await recordAudit(app, tx, caller, {
      action: "webhook.redeliver",
      target: { kind: "webhook", uuid: w.uuid, tenantUuid: w.tenantUuid },
    });
    return { uuid: id };
  });
}

/** A test event (`webhook_ping`) to this webhook only, whatever its filter (a disabled one included: a check). */
export async function pingWebhook(app: AppContext, caller: Caller, uuid: string): Promise<{ uuid: string }> {
  return inTransaction(app, async (tx) => {
    const w = await requireVisibleWebhook(app, caller, uuid, tx);
    const payload: WebhookPayload & { ping: true } = {
      webhook_uuid: w.uuid,
      message_id: `msg_${crypto.randomUUID().replaceAll("-", "")}`,
      event: {
        type: "webhook_ping",
        timestamp: new Date().toISOString(),
        tenant_uuid: w.tenantUuid,
        data: { webhook_uuid: w.uuid },
      },
      ping: true,
    };
    const id = await enqueueDelivery(tx, {
      kind: WEBHOOK_KIND,
      ownerKey: w.uuid,
      orderingKey: null,
      payload,
      tenantUuid: w.tenantUuid,
    });
    return { uuid: id };
  });
}
