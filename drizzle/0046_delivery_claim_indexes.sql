-- The delivery queue's claim (services/outbound/delivery-queue.ts, issue 44 item 6) reads by index only:
-- each owner's pending deliveries in recording order (the claim looks at the first few of each owner that has
-- free slots, instead of ranking every pending row), and the deliveries in flight (claimed, not yet finished),
-- counted per owner against `per_owner_concurrency`.
CREATE INDEX IF NOT EXISTS "tessera_outbound_delivery_pending_idx" ON "tessera_outbound_delivery" ("owner_key", "seq") WHERE "status" = 'pending';
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_outbound_delivery_claimed_idx" ON "tessera_outbound_delivery" ("owner_key") WHERE "status" = 'pending' AND "claimed_by" IS NOT NULL;
--> statement-breakpoint
-- The claim no longer reads the queue in due order across owners: that index only cost a write per claim and
-- per result.
DROP INDEX IF EXISTS "tessera_outbound_delivery_due_idx";
