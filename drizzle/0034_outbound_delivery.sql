-- The durable outbound delivery queue (services/outbound/delivery-queue.ts): HTTP calls to URLs that tenants
-- chose (webhooks, OpenID Connect back-channel logout), written in the transaction of the change that causes
-- them and sent by a worker of any instance (rows claimed with FOR UPDATE SKIP LOCKED), retried with
-- back-off until delivered or too old. `seq` orders deliveries of one (owner_key, ordering_key).
CREATE TABLE IF NOT EXISTS "tessera_outbound_delivery" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL UNIQUE,
	"kind" text NOT NULL,
	"owner_key" text NOT NULL,
	"ordering_key" text,
	"payload" jsonb NOT NULL,
	"tenant_uuid" varchar(38),
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"claimed_by" text,
	"claimed_until" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"last_attempt_at" timestamp with time zone,
	"last_status_code" integer,
	"last_error" text,
	"last_latency_ms" integer
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_outbound_delivery_due_idx" ON "tessera_outbound_delivery" ("next_attempt_at", "seq") WHERE "status" = 'pending';
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_outbound_delivery_owner_idx" ON "tessera_outbound_delivery" ("owner_key", "ordering_key", "seq") WHERE "status" = 'pending';
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_outbound_delivery_log_idx" ON "tessera_outbound_delivery" ("owner_key", "seq");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_outbound_delivery_finished_idx" ON "tessera_outbound_delivery" ("finished_at") WHERE "finished_at" IS NOT NULL;
--> statement-breakpoint
-- Each owner's failure streak (consecutive failed attempts, whatever the delivery): what disables a webhook.
CREATE TABLE IF NOT EXISTS "tessera_outbound_owner" (
	"owner_key" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"failures" integer DEFAULT 0 NOT NULL,
	"failing_since" timestamp with time zone,
	"last_success_at" timestamp with time zone
);
--> statement-breakpoint
-- The delivery workers listening for the queue's NOTIFY (refreshed every minute): as for the outbox
-- (migration 0027), writers notify only while one says it listens; workers poll anyway.
CREATE TABLE IF NOT EXISTS "tessera"."delivery_listener" (
	"instance_id" varchar(64) PRIMARY KEY NOT NULL,
	"seen_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE OR REPLACE FUNCTION tessera.notify_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM tessera.delivery_listener WHERE seen_at > now() - interval '2 minutes') THEN
    PERFORM pg_notify('tessera_delivery', '');
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS tessera_outbound_delivery_inserted ON "tessera_outbound_delivery";
--> statement-breakpoint
CREATE TRIGGER tessera_outbound_delivery_inserted AFTER INSERT ON "tessera_outbound_delivery"
  FOR EACH STATEMENT EXECUTE FUNCTION tessera.notify_delivery();
--> statement-breakpoint
-- Webhook subscriptions (issue 44): a tenant's endpoint, the bus event names (or `prefix*`) it wants, and its
-- Standard Webhooks signing secrets (the previous one stays valid until `previous_secret_expires_at`).
CREATE TABLE IF NOT EXISTS "tessera_webhook" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL REFERENCES "auth_tenant"("uuid") ON DELETE CASCADE,
	"url" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"events" text[] NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"disabled_reason" text,
	"secret" text NOT NULL,
	"previous_secret" text,
	"previous_secret_expires_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_webhook_tenant_idx" ON "tessera_webhook" ("tenant_uuid");
--> statement-breakpoint
-- Every event recorded in the outbox becomes, in the same statement, one delivery per enabled webhook whose
-- filter names it and whose tenant's subtree holds the event's tenant (events of no tenant: the master
-- tenant's webhooks). Ordered per webhook and aggregate (the resource). Nothing happens without webhooks.
CREATE OR REPLACE FUNCTION tessera.webhook_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM tessera_webhook WHERE enabled) THEN
    RETURN NULL;
  END IF;
  INSERT INTO tessera_outbound_delivery (kind, owner_key, ordering_key, payload, tenant_uuid)
  SELECT 'webhook', w.uuid, e.aggregate,
    jsonb_build_object(
      'webhook_uuid', w.uuid,
      'message_id', 'msg_' || replace(gen_random_uuid()::text, '-', ''),
      'event', jsonb_build_object(
        'type', e.name,
        'timestamp', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'tenant_uuid', e.headers->>'tenant_uuid',
        'data', COALESCE(e.payload->'data', '{}'::jsonb))),
    w.tenant_uuid
  FROM tessera_new e
  JOIN tessera_webhook w ON w.enabled
    AND (e.name = ANY (w.events)
      OR EXISTS (SELECT 1 FROM unnest(w.events) p WHERE right(p, 1) = '*' AND starts_with(e.name, left(p, -1))))
    AND (CASE WHEN e.headers->>'tenant_uuid' IS NULL
      THEN EXISTS (SELECT 1 FROM auth_tenant t WHERE t.uuid = w.tenant_uuid AND t.uuid = t.parent_uuid)
      ELSE EXISTS (SELECT 1 FROM tessera.tenant_path wp JOIN tessera.tenant_path ep ON starts_with(ep.path, wp.path)
        WHERE wp.tenant_uuid = w.tenant_uuid AND ep.tenant_uuid = e.headers->>'tenant_uuid') END)
  ORDER BY e.id, w.uuid;
  RETURN NULL;
END $$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS tessera_event_outbox_webhooks ON "tessera_event_outbox";
--> statement-breakpoint
CREATE TRIGGER tessera_event_outbox_webhooks AFTER INSERT ON "tessera_event_outbox"
  REFERENCING NEW TABLE AS tessera_new FOR EACH STATEMENT EXECUTE FUNCTION tessera.webhook_fan_out();
