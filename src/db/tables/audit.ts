// Tessera addition (issue 26): the audit trail. One row per recorded decision or change, chained:
// each tenant has up to eight chains (lanes, so its concurrent writers need not commit one at a
// time), and each row's `hash` is SHA-256 of the previous row's hash (of the same chain) followed
// by the row's canonical content, computed by a trigger (migrations audit, audit_lanes) that
// appends under the chain head's row lock. In the `tessera` schema: imports and exports between
// databases (db/transfer.ts) copy `public` only; the trail stays with its database (`tessera audit
// export` takes it out). `tessera.audit_chain` holds each chain's head and its retention anchor.
import { sql } from "drizzle-orm";
import {
  bigint,
  customType,
  index,
  jsonb,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  varchar,
} from "drizzle-orm/pg-core";
import { tesseraSchema } from "./counters.ts";

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => "bytea" });

export const auditEntries = tesseraSchema.table(
  "audit",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    /** Replaced by the trigger with a UUIDv7 (time-ordered: the uuid index grows at its end). */
    uuid: varchar("uuid", { length: 36 }).notNull().default(sql`gen_random_uuid()::text`),
    /** Set by the trigger once the chain is locked: increasing along each chain. */
    time: timestamp("time", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    /** The tenant whose administrators see the row (the target's, else the actor's, else the master); the chain. */
    tenantUuid: varchar("tenant_uuid", { length: 38 }).notNull(),
    actorUserUuid: varchar("actor_user_uuid", { length: 38 }),
    actorSessionUuid: varchar("actor_session_uuid", { length: 38 }),
    actorTenantUuid: varchar("actor_tenant_uuid", { length: 38 }),
    actorAddress: text("actor_address"),
    actorUserAgent: text("actor_user_agent"),
    action: text("action").notNull(),
    targetKind: text("target_kind"),
    targetUuid: varchar("target_uuid", { length: 64 }),
    targetTenantUuid: varchar("target_tenant_uuid", { length: 38 }),
    outcome: text("outcome").notNull(),
    changes: jsonb("changes").notNull().default(sql`'[]'::jsonb`),
    /** Which of its tenant's chains the row extends (0–7). */
    chainLane: smallint("chain_lane").notNull().default(0),
    chainSeq: bigint("chain_seq", { mode: "number" }).notNull().default(0),
    hash: bytea("hash").notNull().default(sql`'\\x'::bytea`),
  },
  (t) => [
    uniqueIndex("tessera_audit_uuid_idx").on(t.uuid),
    uniqueIndex("tessera_audit_chain_idx").on(t.tenantUuid, t.chainLane, t.chainSeq),
    index("tessera_audit_tenant_time_idx").on(t.tenantUuid, t.time.desc(), t.id.desc()),
    index("tessera_audit_time_idx").on(t.time.desc(), t.id.desc()),
    index("tessera_audit_actor_idx")
      .on(t.actorUserUuid, t.time.desc(), t.id.desc())
      .where(sql`actor_user_uuid is not null`),
    index("tessera_audit_target_idx").on(t.targetUuid, t.time.desc(), t.id.desc()).where(sql`target_uuid is not null`),
  ],
);

export const auditChains = tesseraSchema.table(
  "audit_chain",
  {
    tenantUuid: varchar("tenant_uuid", { length: 38 }).notNull(),
    /** The chain's number among its tenant's (0 first; more are opened while the others are busy). */
    lane: smallint("lane").notNull().default(0),
    /** Sequence number and hash of the chain's last row. */
    seq: bigint("seq", { mode: "number" }).notNull().default(0),
    hash: bytea("hash").notNull(),
    /** The last row removed by retention: verification starts after it, from its hash. */
    anchorSeq: bigint("anchor_seq", { mode: "number" }).notNull().default(0),
    anchorHash: bytea("anchor_hash").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantUuid, t.lane] })],
);
