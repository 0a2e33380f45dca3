// The outbox side of event delivery: claim pending rows (one claimer at a time, in order per
// aggregate, with a lease so a crashed instance's rows go back to the pool), mark them published,
// and forget old published rows.
import { and, eq, inArray, isNull, lt, sql } from "drizzle-orm";
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

/** Deletes published rows older than `retentionSeconds`. */
export async function prunePublished(app: AppContext, retentionSeconds: number): Promise<void> {
  await app.db.delete(eventOutbox).where(lt(eventOutbox.publishedAt, new Date(Date.now() - retentionSeconds * 1000)));
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
