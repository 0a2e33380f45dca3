// The outbox side of event delivery: claim pending rows (one claimer at a time, in order per
// aggregate, with a lease so a crashed instance's rows go back to the pool), mark them published,
// and forget old rows no consumer needs any more (`pruneOutbox`, run by the cleanup job).
import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import type { AppContext } from "../boot/context.ts";
import { execRows } from "../db/index.ts";
import { eventOutbox, outboxListeners } from "../db/schema.ts";
import { inTransaction } from "../db/tx.ts";

export interface OutboxRow {
  id: number;
  name: string;
  routing_key: string;
  headers: Record<string, unknown>;
  payload: Record<string, unknown>;
  aggregate: string;
}

const LEASE_SECONDS = 30;

/**
 * Claims up to `limit` pending rows for `instanceId`, oldest first. Claims are serialised with an
 * advisory lock, and a row is skipped while an earlier row of its aggregate is leased to another
 * instance, so each aggregate's events go out in order and no row is leased twice.
 */
export async function claimBatch(app: AppContext, instanceId: string, limit = 100): Promise<OutboxRow[]> {
  return inTransaction(app, async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(7407240)`);
    const rows = await execRows<OutboxRow>(
      tx,
      sql`update tessera_event_outbox set claimed_by = ${instanceId}, claimed_until = now() + make_interval(secs => ${LEASE_SECONDS}), attempts = attempts + 1
          where id in (
            select o.id from tessera_event_outbox o
            where o.published_at is null
              and (o.claimed_until is null or o.claimed_until < now() or o.claimed_by = ${instanceId})
              and not exists (
                select 1 from tessera_event_outbox e
                where e.aggregate = o.aggregate and e.published_at is null and e.id < o.id
                  and e.claimed_by <> ${instanceId} and e.claimed_until >= now())
            order by o.id limit ${limit})
          returning id, name, routing_key, headers, payload, aggregate`,
    );
    return rows.map((r) => ({ ...r, id: Number(r.id) })).sort((a, b) => a.id - b.id);
  });
}

/** Marks rows published (only those still leased to this instance). */
export async function markPublished(app: AppContext, instanceId: string, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await app.db
    .update(eventOutbox)
    .set({ publishedAt: new Date(), claimedUntil: null })
    .where(and(inArray(eventOutbox.id, ids), eq(eventOutbox.claimedBy, instanceId)));
}

/** Gives the rows back at once (delivery failed) instead of waiting for the lease to end. */
export async function releaseClaims(app: AppContext, instanceId: string): Promise<void> {
  await app.db
    .update(eventOutbox)
    .set({ claimedUntil: null, claimedBy: null })
    .where(and(eq(eventOutbox.claimedBy, instanceId), isNull(eventOutbox.publishedAt)));
}

export async function outboxBacklog(app: AppContext): Promise<number> {
  return (await outboxPending(app)).backlog;
}

/** How many events wait, and the age in seconds of the oldest (null when none waits). */
export async function outboxPending(app: AppContext): Promise<{ backlog: number; oldestSeconds: number | null }> {
  const [row] = await app.db
    .select({
      n: sql<number>`count(*)::int`,
      age: sql<number | null>`extract(epoch from now() - min(${eventOutbox.createdAt}))::float8`,
    })
    .from(eventOutbox)
    .where(isNull(eventOutbox.publishedAt));
  return { backlog: row?.n ?? 0, oldestSeconds: row?.age == null ? null : Number(row.age) };
}

/** Rows deleted per statement of `pruneOutbox`, and statements per run at most (the next run goes on). */
const PRUNE_BATCH = 5000;
const PRUNE_MAX_BATCHES = 20;

/**
 * Deletes outbox rows older than `retentionSeconds`, in batches, and returns how many went. Who reads a
 * row: the webhook fan-out (migration 0034's trigger, in the very statement that inserts it: it never
 * comes back for it), the bus publisher (unpublished rows, until the broker confirms them) and the
 * diagnostics (`/status`'s backlog, `listRecordedEvents`). So a published row may go once old; an
 * unpublished one only where no publisher will ever want it: this instance has no `amqp` section AND
 * no publisher of another instance on this database announced itself within the retention (a broker
 * that is down keeps its publisher announcing, so its rows stay). Safe on several instances at once:
 * each batch skips the rows another instance is deleting.
 */
export async function pruneOutbox(
  app: AppContext,
  retentionSeconds: number,
  busConfigured = app.config.amqp != null,
): Promise<number> {
  const cutoff = sql`now() - make_interval(secs => ${retentionSeconds})`;
  const unpublishedToo = busConfigured
    ? sql`false`
    : sql`not exists (select 1 from ${outboxListeners} l where l.seen_at > ${cutoff})`;
  let total = 0;
  for (let i = 0; i < PRUNE_MAX_BATCHES; i++) {
    const rows = await execRows<{ id: number }>(
      app.db,
      sql`delete from tessera_event_outbox where id in (
            select o.id from tessera_event_outbox o
            where o.created_at < ${cutoff}
              and (o.published_at < ${cutoff} or (o.published_at is null and ${unpublishedToo}))
            order by o.id limit ${PRUNE_BATCH} for update skip locked)
          returning id`,
    );
    total += rows.length;
    if (rows.length < PRUNE_BATCH) break;
  }
  return total;
}

/**
 * This publisher listens for the outbox's NOTIFY (again: called every minute): the trigger notifies
 * only while some publisher said so within two minutes (migration 0027).
 */
export async function announceListener(app: AppContext, instanceId: string): Promise<void> {
  await app.db
    .insert(outboxListeners)
    .values({ instanceId })
    .onConflictDoUpdate({ target: outboxListeners.instanceId, set: { seenAt: sql`now()` } });
}

/** This publisher stops: its row goes (the last one gone, writers notify no more). */
export async function withdrawListener(app: AppContext, instanceId: string): Promise<void> {
  await app.db.delete(outboxListeners).where(eq(outboxListeners.instanceId, instanceId));
}
