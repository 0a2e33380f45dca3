// The audit chain's checks and upkeep (issue 26, docs/audit.md "Tamper evidence"): `verifyAudit`
// walks every chain (each tenant has up to eight, its lanes) from its anchor and names the first
// broken link; `applyRetention` deletes entries older than `audit.retention_days`, a prefix of each
// chain at a time, moving the chain's anchor in the same transaction so verification still starts
// from a known hash.
import { createHash } from "node:crypto";
import { and, asc, eq, gt, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { execRows } from "../../db/index.ts";
import { auditChains, auditEntries } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";

export interface BrokenLink {
  tenant_uuid: string;
  /** Which of the tenant's chains. */
  lane: number;
  /** Position in that chain where the check failed. */
  seq: number;
  /** The entry at that position (null when it is missing). */
  uuid: string | null;
  reason: "hash_mismatch" | "missing_entry" | "head_mismatch";
  message: string;
}

export interface VerifyReport {
  ok: boolean;
  chains: number;
  entries: number;
  broken: BrokenLink | null;
}

const PAGE = 5000;

/** SHA-256(previous hash ‖ content) — the trigger's computation (migration audit), redone here. */
const link = (prev: Buffer, content: string) => createHash("sha256").update(prev).update(content, "utf8").digest();

/** Checks every chain (or one tenant's); stops at the first broken link. */
export async function verifyAudit(app: AppContext, tenantUuid?: string): Promise<VerifyReport> {
  const chains = await app.db
    .select()
    .from(auditChains)
    .where(tenantUuid ? eq(auditChains.tenantUuid, tenantUuid) : undefined)
    .orderBy(asc(auditChains.tenantUuid), asc(auditChains.lane));
  let entries = 0;
  for (const chain of chains) {
    const name = `tenant ${chain.tenantUuid}, chain ${chain.lane}`;
    let prev = Buffer.from(chain.anchorHash);
    let expected = chain.anchorSeq + 1;
    for (;;) {
      const rows = await execRows<{
        uuid: string;
        chain_seq: string | number;
        hash: Buffer | Uint8Array;
        content: string;
      }>(
        app.db,
        sql`select a.uuid, a.chain_seq, a.hash, tessera.audit_content(a) as content from tessera.audit a
            where a.tenant_uuid = ${chain.tenantUuid} and a.chain_lane = ${chain.lane} and a.chain_seq >= ${expected}
            order by a.chain_seq limit ${PAGE}`,
      );
      for (const r of rows) {
        const seq = Number(r.chain_seq);
        const broken = (reason: BrokenLink["reason"], uuid: string | null, message: string): VerifyReport => ({
          ok: false,
          chains: chains.length,
          entries,
          broken: {
            tenant_uuid: chain.tenantUuid,
            lane: chain.lane,
            seq: reason === "missing_entry" ? expected : seq,
            uuid,
            reason,
            message,
          },
        });
        if (seq !== expected) return broken("missing_entry", null, `entry ${expected} of ${name} is missing (deleted)`);
        if (!link(prev, r.content).equals(Buffer.from(r.hash)))
          return broken("hash_mismatch", r.uuid, `entry ${r.uuid} (${seq} of ${name}) was altered`);
        prev = Buffer.from(r.hash);
        expected++;
        entries++;
      }
      if (rows.length < PAGE) break;
    }
    // The head records the last append: entries deleted from the end show here.
    if (expected - 1 !== chain.seq || !prev.equals(Buffer.from(chain.hash))) {
      return {
        ok: false,
        chains: chains.length,
        entries,
        broken: {
          tenant_uuid: chain.tenantUuid,
          lane: chain.lane,
          seq: expected,
          uuid: null,
          reason: expected - 1 < chain.seq ? "missing_entry" : "head_mismatch",
          message: `the chain of ${name} ends at ${expected - 1} but its head says ${chain.seq}`,
        },
      };
    }
  }
  return { ok: true, chains: chains.length, entries, broken: null };
}

const RETENTION_BATCH = 5000;

/**
 * Deletes the entries older than `retentionDays`, `batch` at a time, oldest first along each chain
 * (times increase along a chain: the trigger takes them under the chain's lock), moving the
 * chain's anchor to the last deleted entry in the same transaction. Returns how many went.
 */
export async function applyRetention(
  app: AppContext,
  retentionDays = app.config.audit.retention_days,
  batch = RETENTION_BATCH,
  now = Date.now(),
): Promise<number> {
  if (retentionDays <= 0) return 0;
  const cutoff = new Date(now - retentionDays * 86_400_000);
  const e = auditEntries;
  // Only the chains holding an expired entry: a short range of the time index while retention keeps
  // up (never one transaction per tenant of 100,000 at every run).
  const chains = await app.db
    .selectDistinct({ tenantUuid: e.tenantUuid, lane: e.chainLane })
    .from(e)
    .where(sql`${e.time} < ${cutoff.toISOString()}::timestamptz`);
  let deleted = 0;
  for (const { tenantUuid, lane } of chains) {
    const thisChain = and(eq(auditChains.tenantUuid, tenantUuid), eq(auditChains.lane, lane));
    for (;;) {
      const n = await inTransaction(app, async (tx) => {
        // The chain's row lock: appends and this deletion do not interleave (appends take another lane).
        const [chain] = await tx.select().from(auditChains).where(thisChain).for("update");
        if (!chain) return 0;
        const gone = await tx
          .delete(e)
          .where(
            sql`${e.id} in (${tx
              .select({ id: e.id })
              .from(e)
              .where(
                and(
                  eq(e.tenantUuid, tenantUuid),
                  eq(e.chainLane, lane),
                  gt(e.chainSeq, chain.anchorSeq),
                  sql`${e.time} < ${cutoff.toISOString()}::timestamptz`,
                ),
              )
              .orderBy(asc(e.chainSeq))
              .limit(batch)})`,
          )
          .returning({ seq: e.chainSeq, hash: e.hash });
        if (!gone.length) return 0;
        const last = gone.reduce((a, b) => (b.seq > a.seq ? b : a));
        await tx.update(auditChains).set({ anchorSeq: last.seq, anchorHash: last.hash }).where(thisChain);
        return gone.length;
      });
      deleted += n;
      if (n < batch) break;
    }
  }
  return deleted;
}
