// Outbound HTTP deliveries (webhooks, OpenID Connect back-channel logout) and webhook subscriptions
// (migration 0034). The queue's behaviour: services/outbound/delivery-queue.ts.
import { sql } from "drizzle-orm";
import {
  bigserial,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uuid,
  varchar,
} from "drizzle-orm/pg-core";
import { uuidPk } from "./columns.ts";
import { tesseraSchema } from "./counters.ts";
import { tenants } from "./identity.ts";

/** One HTTP call to make, until delivered (2xx), dropped (its owner is gone) or given up (too old). */
export const outboundDeliveries = pgTable(
  "tessera_outbound_delivery",
  {
    seq: bigserial("seq", { mode: "number" }).primaryKey(),
    id: uuid("id").notNull().unique().defaultRandom(),
    kind: text("kind").notNull(),
    ownerKey: text("owner_key").notNull(),
    orderingKey: text("ordering_key"),
    payload: jsonb("payload").notNull(),
    tenantUuid: varchar("tenant_uuid", { length: 38 }),
    /** pending | delivered | failed (given up) | dropped */
    status: text("status").notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    claimedBy: text("claimed_by"),
    claimedUntil: timestamp("claimed_until", { withTimezone: true, mode: "date" }),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    finishedAt: timestamp("finished_at", { withTimezone: true, mode: "date" }),
    lastAttemptAt: timestamp("last_attempt_at", { withTimezone: true, mode: "date" }),
    lastStatusCode: integer("last_status_code"),
    lastError: text("last_error"),
    lastLatencyMs: integer("last_latency_ms"),
  },
  (t) => [
    index("tessera_outbound_delivery_owner_idx")
      .on(t.ownerKey, t.orderingKey, t.seq)
      .where(sql`${t.status} = 'pending'`),
    index("tessera_outbound_delivery_log_idx").on(t.ownerKey, t.seq),
    // Migration 0046: what the claim reads (an owner's pending deliveries in order; its deliveries in flight).
    index("tessera_outbound_delivery_pending_idx").on(t.ownerKey, t.seq).where(sql`${t.status} = 'pending'`),
    index("tessera_outbound_delivery_claimed_idx")
      .on(t.ownerKey)
      .where(sql`${t.status} = 'pending' and ${t.claimedBy} is not null`),
    index("tessera_outbound_delivery_finished_idx").on(t.finishedAt).where(sql`${t.finishedAt} is not null`),
  ],
);

/** Each owner's failure streak: consecutive failed attempts, whatever the delivery. */
export const outboundOwners = pgTable("tessera_outbound_owner", {
  ownerKey: text("owner_key").primaryKey(),
  kind: text("kind").notNull(),
  failures: integer("failures").notNull().default(0),
  failingSince: timestamp("failing_since", { withTimezone: true, mode: "date" }),
  lastSuccessAt: timestamp("last_success_at", { withTimezone: true, mode: "date" }),
});

/** The delivery workers listening for the queue's NOTIFY (as `outbox_listener` for the bus). */
export const deliveryListeners = tesseraSchema.table("delivery_listener", {
  instanceId: varchar("instance_id", { length: 64 }).primaryKey(),
  seenAt: timestamp("seen_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
});

/** Webhook subscriptions; a trigger on the outbox turns matching events into deliveries. */
export const webhooks = pgTable(
  "tessera_webhook",
  {
    uuid: uuidPk(),
    tenantUuid: varchar("tenant_uuid", { length: 38 })
      .notNull()
      .references(() => tenants.uuid, { onDelete: "cascade" }),
    url: text("url").notNull(),
    description: text("description").notNull().default(""),
    events: text("events").array().notNull(),
    enabled: boolean("enabled").notNull().default(true),
    disabledReason: text("disabled_reason"),
    secret: text("secret").notNull(),
    previousSecret: text("previous_secret"),
    previousSecretExpiresAt: timestamp("previous_secret_expires_at", { withTimezone: true, mode: "date" }),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [index("tessera_webhook_tenant_idx").on(t.tenantUuid)],
);
