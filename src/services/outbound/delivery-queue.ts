// The durable outbound delivery queue: HTTP calls to URLs that tenants chose (webhooks, OpenID Connect
// back-channel logout), recorded in the transaction of the change that causes them — nothing is sent for a
// rolled-back change, nothing is lost for a committed one — and sent by the worker (delivery-worker.ts) of any
// instance, at least once: retried with exponential back-off and jitter until a 2xx, until the owner is gone
// (`prepare` answers null) or until `outbound_delivery.max_age_seconds`.
//
// Contract for a kind of delivery:
// - `enqueueDelivery(tx, {kind, ownerKey, orderingKey, payload, tenantUuid})` in the caller's transaction.
//   `ownerKey` names the receiver (a webhook uuid, an OIDC client id): its failure streak is kept, and at most
//   `per_owner_concurrency` of its deliveries are in flight. Deliveries of one (ownerKey, orderingKey) go out
//   one after the other in the order recorded (a later one waits while an earlier one is pending, retries
//   included); a null orderingKey orders nothing. `payload` is JSON and carries no secret (it is stored).
// - `registerDeliveryKind(kind, {prepare, onGaveUp?, onAttemptFailed?, onDelivered?})` once per process (at
//   start-up). `prepare(payload, ctx)` runs at every attempt (fresh signatures and timestamps) and returns the
//   request to send through `outboundFetch` (the outbound_http policy: checked after DNS resolution, no
//   redirects followed), or null to drop the delivery.
import { and, eq, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { execRows, type DbOrTx } from "../../db/index.ts";
import { deliveryListeners, outboundDeliveries } from "../../db/schema.ts";
import { afterCommit } from "../../db/tx.ts";

export interface DeliveryRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface DeliveryContext {
  attempt: number;
  deliveryId: string;
  app: AppContext;
}

/** A delivery as its handlers see it. */
export interface Delivery {
  id: string;
  seq: number;
  kind: string;
  ownerKey: string;
  orderingKey: string | null;
  payload: unknown;
  tenantUuid: string | null;
  attempts: number;
  createdAt: Date;
  lastStatusCode: number | null;
  lastError: string | null;
}

export interface OwnerStreak {
  /** Consecutive failed attempts of this owner's deliveries (this one included). */
  failures: number;
  failingSince: Date;
}

export interface DeliveryKind {
  prepare(payload: unknown, ctx: DeliveryContext): Promise<DeliveryRequest | null>;
  /** The delivery was given up (too old). */
  onGaveUp?(delivery: Delivery, ctx: { app: AppContext }): Promise<void>;
  /** An attempt failed (the delivery may be retried): the owner's failure streak, e.g. to disable it. */
  onAttemptFailed?(delivery: Delivery, streak: OwnerStreak, ctx: { app: AppContext }): Promise<void>;
  onDelivered?(delivery: Delivery, ctx: { app: AppContext }): Promise<void>;
}

export interface NewDelivery {
  kind: string;
  ownerKey: string;
  orderingKey: string | null;
  payload: unknown;
  tenantUuid: string | null;
}

const kinds = new Map<string, DeliveryKind>();

/** Declares how deliveries of `kind` are made (again: replaces). */
export function registerDeliveryKind(kind: string, handler: DeliveryKind): void {
  kinds.set(kind, handler);
}

export function deliveryKind(kind: string): DeliveryKind | undefined {
  return kinds.get(kind);
}

/** The workers of this process, woken when a transaction that enqueued commits (others hear the NOTIFY). */
const localWakers = new Set<() => void>();

export function onLocalEnqueue(wake: () => void): () => void {
  localWakers.add(wake);
  return () => localWakers.delete(wake);
}

/** Records a delivery in the caller's transaction (sent once it commits); its id. */
export async function enqueueDelivery(tx: DbOrTx, delivery: NewDelivery): Promise<string> {
  const [id] = await enqueueDeliveries(tx, [delivery]);
  return id!;
}

/** Records several deliveries, in order, in one statement; their ids. */
export async function enqueueDeliveries(tx: DbOrTx, deliveries: NewDelivery[]): Promise<string[]> {
  if (deliveries.length === 0) return [];
  const rows = await tx
    .insert(outboundDeliveries)
    .values(
      deliveries.map((d) => ({
        kind: d.kind,
        ownerKey: d.ownerKey,
        orderingKey: d.orderingKey,
        payload: d.payload ?? null,
        tenantUuid: d.tenantUuid,
      })),
    )
    .returning({ id: outboundDeliveries.id, seq: outboundDeliveries.seq });
  afterCommit(tx, () => {
    for (const wake of localWakers) wake();
  });
  return rows.sort((a, b) => a.seq - b.seq).map((r) => r.id);
}

interface DeliveryRow {
  seq: number | string;
  id: string;
  kind: string;
  owner_key: string;
  ordering_key: string | null;
  payload: unknown;
  tenant_uuid: string | null;
  attempts: number;
  created_at: Date | string;
  last_status_code: number | null;
  last_error: string | null;
}

function toDelivery(r: DeliveryRow): Delivery {
  return {
    id: r.id,
    seq: Number(r.seq),
    kind: r.kind,
    ownerKey: r.owner_key,
    orderingKey: r.ordering_key,
    payload: typeof r.payload === "string" ? JSON.parse(r.payload) : r.payload,
    tenantUuid: r.tenant_uuid,
    attempts: Number(r.attempts),
    createdAt: new Date(r.created_at),
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
  };
}

/**
 * Claims up to `limit` due deliveries for `instanceId` (FOR UPDATE SKIP LOCKED: instances claiming together
 * take different rows). A delivery is due when its time has come, no earlier delivery of its (owner, ordering
 * key) is pending, and none of its owner's deliveries is in flight anywhere; at most `perOwner` of one owner
 * are taken. Each claimed row counts an attempt and is leased for `leaseSeconds` (a crashed instance's rows
 * come back once the lease ends).
 */
export async function claimDeliveries(
  app: AppContext,
  instanceId: string,
  limit: number,
  perOwner: number,
  leaseSeconds: number,
): Promise<Delivery[]> {
  const rows = await execRows<DeliveryRow>(
    app.db,
    sql`update tessera_outbound_delivery d
        set claimed_by = ${instanceId}, claimed_until = now() + make_interval(secs => ${leaseSeconds}),
            attempts = d.attempts + 1, last_attempt_at = now()
        where d.seq in (
          select l.seq from tessera_outbound_delivery l
          where l.seq in (
            select r.seq from (
              select p.seq, p.next_attempt_at,
                     row_number() over (partition by p.owner_key order by p.seq) as rn
              from tessera_outbound_delivery p
              where p.status = 'pending' and p.next_attempt_at <= now()
                and (p.claimed_until is null or p.claimed_until < now())
                and not exists (
                  select 1 from tessera_outbound_delivery b
                  where b.owner_key = p.owner_key and b.status = 'pending' and b.claimed_until >= now())
                and (p.ordering_key is null or not exists (
                  select 1 from tessera_outbound_delivery e
                  where e.owner_key = p.owner_key and e.ordering_key = p.ordering_key
                    and e.status = 'pending' and e.seq < p.seq))
            ) r
            where r.rn <= ${perOwner}
            order by r.next_attempt_at, r.seq
            limit ${limit})
            -- Checked again on the row's latest version once locked (the candidates above come from the
            -- statement's snapshot: another worker may have claimed one since).
            and l.status = 'pending' and (l.claimed_until is null or l.claimed_until < now())
          for update skip locked)
        returning d.seq, d.id, d.kind, d.owner_key, d.ordering_key, d.payload, d.tenant_uuid, d.attempts,
                  d.created_at, d.last_status_code, d.last_error`,
  );
  return rows.map(toDelivery).sort((a, b) => a.seq - b.seq);
}

export interface AttemptOutcome {
  statusCode: number | null;
  error: string | null;
  latencyMs: number | null;
}

/** Ends a delivery: delivered (2xx), dropped (nothing to send any more) or failed (given up). */
export async function finishDelivery(
  app: AppContext,
  instanceId: string,
  seq: number,
  status: "delivered" | "dropped" | "failed",
  outcome: AttemptOutcome,
): Promise<void> {
  await app.db
    .update(outboundDeliveries)
    .set({
      status,
      finishedAt: new Date(),
      claimedBy: null,
      claimedUntil: null,
      lastStatusCode: outcome.statusCode,
      lastError: outcome.error,
      lastLatencyMs: outcome.latencyMs,
    })
    .where(and(eq(outboundDeliveries.seq, seq), eq(outboundDeliveries.claimedBy, instanceId)));
}

/** A failed attempt to retry at `at`. */
export async function retryDelivery(
  app: AppContext,
  instanceId: string,
  seq: number,
  at: Date,
  outcome: AttemptOutcome,
): Promise<void> {
  await app.db
    .update(outboundDeliveries)
    .set({
      nextAttemptAt: at,
      claimedBy: null,
      claimedUntil: null,
      lastStatusCode: outcome.statusCode,
      lastError: outcome.error,
      lastLatencyMs: outcome.latencyMs,
    })
    .where(and(eq(outboundDeliveries.seq, seq), eq(outboundDeliveries.claimedBy, instanceId)));
}

/** Gives a claimed delivery back untouched (no handler for its kind here; stopping), its attempt uncounted. */
export async function releaseDelivery(app: AppContext, instanceId: string, seq: number, at: Date): Promise<void> {
  await app.db
    .update(outboundDeliveries)
    .set({
      nextAttemptAt: at,
      claimedBy: null,
      claimedUntil: null,
      attempts: sql`greatest(${outboundDeliveries.attempts} - 1, 0)`,
    })
    .where(and(eq(outboundDeliveries.seq, seq), eq(outboundDeliveries.claimedBy, instanceId)));
}

/** The owner's streak after an attempt: reset by a success, else one more failure. */
export async function recordOwnerAttempt(
  app: AppContext,
  kind: string,
  ownerKey: string,
  ok: boolean,
): Promise<OwnerStreak | null> {
  if (ok) {
    await execRows(
      app.db,
      sql`insert into tessera_outbound_owner (owner_key, kind, failures, failing_since, last_success_at)
          values (${ownerKey}, ${kind}, 0, null, now())
          on conflict (owner_key) do update set failures = 0, failing_since = null, last_success_at = now()`,
    );
    return null;
  }
  const [row] = await execRows<{ failures: number; failing_since: Date | string }>(
    app.db,
    sql`insert into tessera_outbound_owner (owner_key, kind, failures, failing_since)
        values (${ownerKey}, ${kind}, 1, now())
        on conflict (owner_key) do update set failures = tessera_outbound_owner.failures + 1,
          failing_since = coalesce(tessera_outbound_owner.failing_since, now())
        returning failures, failing_since`,
  );
  return { failures: Number(row?.failures ?? 1), failingSince: new Date(row?.failing_since ?? Date.now()) };
}

/** Forgets an owner's streak (a webhook re-enabled, deleted). */
export async function resetOwner(db: DbOrTx, ownerKey: string): Promise<void> {
  await execRows(db, sql`delete from tessera_outbound_owner where owner_key = ${ownerKey}`);
}

/** Deletes deliveries finished more than `retentionSeconds` ago. */
export async function pruneDeliveries(app: AppContext, retentionSeconds: number): Promise<void> {
  await execRows(
    app.db,
    sql`delete from tessera_outbound_delivery where finished_at < now() - make_interval(secs => ${retentionSeconds})`,
  );
}

/** How many deliveries wait, and the age in seconds of the oldest due one (the lag). */
export async function deliveryBacklog(app: AppContext): Promise<{ pending: number; lagSeconds: number | null }> {
  const [row] = await execRows<{ n: number; lag: number | null }>(
    app.db,
    sql`select count(*)::int as n,
          extract(epoch from now() - min(created_at) filter (where next_attempt_at <= now()))::float8 as lag
        from tessera_outbound_delivery where status = 'pending'`,
  );
  return { pending: Number(row?.n ?? 0), lagSeconds: row?.lag == null ? null : Number(row.lag) };
}

/** This worker listens for the queue's NOTIFY (again: every minute; migration 0034). */
export async function announceDeliveryListener(app: AppContext, instanceId: string): Promise<void> {
  await app.db
    .insert(deliveryListeners)
    .values({ instanceId })
    .onConflictDoUpdate({ target: deliveryListeners.instanceId, set: { seenAt: sql`now()` } });
}

export async function withdrawDeliveryListener(app: AppContext, instanceId: string): Promise<void> {
  await app.db.delete(deliveryListeners).where(eq(deliveryListeners.instanceId, instanceId));
}
