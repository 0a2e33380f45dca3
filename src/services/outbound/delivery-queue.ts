// The durable outbound delivery queue: HTTP calls to URLs that tenants chose (webhooks, OpenID Connect
// back-channel logout), recorded in the transaction of the change that causes them — nothing is sent for a
// rolled-back change, nothing is lost for a committed one — and sent by the worker (delivery-worker.ts) of any
// instance, at least once: retried with exponential back-off and jitter until a 2xx, until the owner is gone
// (`prepare` answers null) or until `outbound_delivery.max_age_seconds`.
//
// Contract for a kind of delivery:
// - `enqueueDelivery(tx, {kind, ownerKey, orderingKey, payload, tenantUuid})` in the caller's transaction.
//   `ownerKey` names the receiver (a webhook uuid, an OIDC client id): its failure streak is kept, and at most
//   `per_owner_concurrency` of its deliveries are in flight (two instances claiming in the same instant may
//   each fill the owner's free slots). Deliveries of one (ownerKey, orderingKey) go out one after the other in
//   the order recorded (a later one waits while an earlier one is pending, retries included); a null
//   orderingKey orders nothing. `payload` is JSON and carries no secret (it is stored).
// - `registerDeliveryKind(kind, {prepare, prepareMany?, onGaveUp?, onAttemptFailed?, onDelivered?})` once per
//   process (at start-up). `prepare(payload, ctx)` runs at every attempt (fresh signatures and timestamps; a
//   claimed batch at once through `prepareMany` when the kind gives it) and returns the request to send
//   through `outboundFetch` (the outbound_http policy: checked after DNS resolution, no redirects followed),
//   or null to drop the delivery.
import { eq, sql } from "drizzle-orm";
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
  /** `prepare` for a claimed batch at once (one read for all), in the same order; used instead when given. */
  prepareMany?(items: { payload: unknown; ctx: DeliveryContext }[]): Promise<(DeliveryRequest | null)[]>;
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
 * How many of an owner's first pending deliveries (in recording order) a claim looks at. The claim never ranks
 * every pending row: it reads, for each owner with free slots, this many by index. A cost bounded per owner,
 * paid for by a limit: behind this many deliveries of one ordering key held up by a retrying head (an endpoint
 * that is down), later deliveries of the same owner wait for that head too; other owners are never affected.
 */
export const CLAIM_WINDOW = 256;

/**
 * Claims up to `limit` due deliveries for `instanceId` (FOR UPDATE SKIP LOCKED: instances claiming together
 * take different rows). A delivery is due when its time has come and no earlier delivery of its (owner,
 * ordering key) is pending (in flight or waiting for a retry); an owner gets at most `perOwner` minus those of
 * its deliveries already in flight (any instance), so a worker claims more as slots free up rather than
 * waiting for a whole batch. Owners share `limit` in turns (each one's first, then each one's second…). Each
 * claimed row counts an attempt and is leased for `leaseSeconds` (a crashed instance's rows come back once
 * the lease ends). Every read goes through an index (migration 0046); the owners with pending deliveries are
 * found by skipping through the index, one probe per owner.
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
    sql`with recursive owners(owner_key) as (
          (select p.owner_key from tessera_outbound_delivery p where p.status = 'pending'
           order by p.owner_key, p.seq limit 1)
          union all
          select (select p.owner_key from tessera_outbound_delivery p
                  where p.status = 'pending' and p.owner_key > o.owner_key order by p.owner_key, p.seq limit 1)
          from owners o where o.owner_key is not null
        ),
        candidates as (
          select c.seq, c.next_attempt_at, row_number() over (partition by o.owner_key order by c.seq) as turn
          from owners o
          cross join lateral (
            select count(*)::int as n from tessera_outbound_delivery b
            where b.owner_key = o.owner_key and b.status = 'pending' and b.claimed_by is not null
              and b.claimed_until >= now()) busy
          cross join lateral (
            select w.seq, w.next_attempt_at from (
              -- The owner as a range, not an equality: with an equality the planner may walk the primary key
              -- in seq order instead, through every finished delivery still kept (hundreds of ms), where the
              -- pending index (owner_key, seq) gives the owner's first pending rows at once.
              select p.owner_key, p.seq, p.next_attempt_at, p.ordering_key, p.claimed_until
              from tessera_outbound_delivery p
              where p.owner_key >= o.owner_key and p.owner_key <= o.owner_key and p.status = 'pending'
              order by p.owner_key, p.seq limit ${CLAIM_WINDOW}) w
            where w.next_attempt_at <= now() and (w.claimed_until is null or w.claimed_until < now())
              and (w.ordering_key is null or not exists (
                select 1 from tessera_outbound_delivery e
                where e.owner_key = o.owner_key and e.ordering_key = w.ordering_key
                  and e.status = 'pending' and e.seq < w.seq))
            order by w.owner_key, w.seq -- the index's order: no sort, the scan stops at the limit
            limit greatest(${perOwner}::int - busy.n, 0)) c
          where o.owner_key is not null
        )
        update tessera_outbound_delivery d
        set claimed_by = ${instanceId}, claimed_until = now() + make_interval(secs => ${leaseSeconds}),
            attempts = d.attempts + 1, last_attempt_at = now()
        where d.seq in (
          select l.seq from tessera_outbound_delivery l
          where l.seq in (select k.seq from candidates k order by k.turn, k.next_attempt_at, k.seq limit ${limit})
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

/**
 * What became of a claimed delivery: ended (delivered: a 2xx; dropped: nothing to send any more; failed: given
 * up), to retry at `at`, or given back untouched (`release`: no handler for its kind here), its attempt uncounted.
 */
export type DeliveryResult =
  | { seq: number; status: "delivered" | "dropped" | "failed"; outcome: AttemptOutcome }
  | { seq: number; status: "retry"; at: Date; outcome: AttemptOutcome }
  | { seq: number; status: "release"; at: Date };

/**
 * Records the results of several claimed deliveries in one statement (rows another instance claimed since,
 * their lease over, are left to it). A delivery ends pending once its result is recorded: the next one of its
 * ordering key becomes due only then.
 */
export async function recordDeliveryResults(
  app: AppContext,
  instanceId: string,
  results: DeliveryResult[],
): Promise<void> {
  if (results.length === 0) return;
  const items = results.map((r) => ({
    seq: r.seq,
    status: r.status === "retry" || r.status === "release" ? "pending" : r.status,
    at: r.status === "retry" || r.status === "release" ? r.at.toISOString() : null,
    touched: r.status !== "release",
    code: r.status === "release" ? null : r.outcome.statusCode,
    error: r.status === "release" ? null : r.outcome.error,
    latency: r.status === "release" ? null : r.outcome.latencyMs,
  }));
  await execRows(
    app.db,
    // The rows are locked in seq order first: a statement changing several of an owner's rows at once (a
    // webhook deleted with its deliveries) takes them in that order too, so the two never deadlock.
    sql`with locked as (
          select l.seq from tessera_outbound_delivery l
          where l.seq in (select (x->>'seq')::bigint from jsonb_array_elements(${JSON.stringify(items)}::jsonb) x)
            and l.claimed_by = ${instanceId}
          order by l.seq for update)
        update tessera_outbound_delivery d
        set status = r.status,
            finished_at = case when r.status = 'pending' then null else now() end,
            next_attempt_at = coalesce(r.at, d.next_attempt_at),
            claimed_by = null, claimed_until = null,
            attempts = case when r.touched then d.attempts else greatest(d.attempts - 1, 0) end,
            last_status_code = case when r.touched then r.code else d.last_status_code end,
            last_error = case when r.touched then r.error else d.last_error end,
            last_latency_ms = case when r.touched then r.latency else d.last_latency_ms end
        from jsonb_to_recordset(${JSON.stringify(items)}::jsonb)
          as r(seq bigint, status text, at timestamptz, touched boolean, code int, error text, latency int)
        where d.seq = r.seq and d.seq in (select seq from locked) and d.claimed_by = ${instanceId}`,
  );
}

/** An owner's attempts since the last record, in the order they ended. */
export interface OwnerAttempts {
  kind: string;
  ownerKey: string;
  /** true: a success. */
  outcomes: boolean[];
}

/**
 * The owners' streaks after their attempts, in one statement: a success resets the streak, each failure after
 * the last success extends it. Returns the streaks of the owners whose last attempt failed.
 */
export async function recordOwnerAttempts(app: AppContext, owners: OwnerAttempts[]): Promise<Map<string, OwnerStreak>> {
  const streaks = new Map<string, OwnerStreak>();
  if (owners.length === 0) return streaks;
  const items = owners.map((o) => {
    const last = o.outcomes.lastIndexOf(true);
    return { owner: o.ownerKey, kind: o.kind, success: last >= 0, failures: o.outcomes.length - 1 - last };
  });
  const rows = await execRows<{ owner_key: string; failures: number; failing_since: Date | string | null }>(
    app.db,
    sql`insert into tessera_outbound_owner as o (owner_key, kind, failures, failing_since, last_success_at)
        select r.owner, r.kind, r.failures, case when r.failures > 0 then now() end, case when r.success then now() end
        from jsonb_to_recordset(${JSON.stringify(items)}::jsonb) as r(owner text, kind text, success boolean, failures int)
        on conflict (owner_key) do update set
          failures = case when excluded.last_success_at is not null then excluded.failures
                          else o.failures + excluded.failures end,
          failing_since = case when excluded.last_success_at is not null then excluded.failing_since
                               else coalesce(o.failing_since, now()) end,
          last_success_at = coalesce(excluded.last_success_at, o.last_success_at)
        returning o.owner_key, o.failures, o.failing_since`,
  );
  for (const row of rows) {
    if (Number(row.failures) > 0 && row.failing_since != null)
      streaks.set(row.owner_key, { failures: Number(row.failures), failingSince: new Date(row.failing_since) });
  }
  return streaks;
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
