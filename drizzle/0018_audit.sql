CREATE TABLE "tessera"."audit_chain" (
	"tenant_uuid" varchar(38) PRIMARY KEY NOT NULL,
	"seq" bigint DEFAULT 0 NOT NULL,
	"hash" "bytea" NOT NULL,
	"anchor_seq" bigint DEFAULT 0 NOT NULL,
	"anchor_hash" "bytea" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tessera"."audit" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "tessera"."audit_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"uuid" varchar(36) DEFAULT gen_random_uuid()::text NOT NULL,
	"time" timestamp with time zone DEFAULT now() NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"actor_user_uuid" varchar(38),
	"actor_session_uuid" varchar(38),
	"actor_tenant_uuid" varchar(38),
	"actor_address" text,
	"actor_user_agent" text,
	"action" text NOT NULL,
	"target_kind" text,
	"target_uuid" varchar(64),
	"target_tenant_uuid" varchar(38),
	"outcome" text NOT NULL,
	"changes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"chain_seq" bigint DEFAULT 0 NOT NULL,
	"hash" "bytea" DEFAULT '\x'::bytea NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "tessera_audit_uuid_idx" ON "tessera"."audit" USING btree ("uuid");--> statement-breakpoint
CREATE UNIQUE INDEX "tessera_audit_chain_idx" ON "tessera"."audit" USING btree ("tenant_uuid","chain_seq");--> statement-breakpoint
CREATE INDEX "tessera_audit_tenant_time_idx" ON "tessera"."audit" USING btree ("tenant_uuid","time" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "tessera_audit_time_idx" ON "tessera"."audit" USING btree ("time" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "tessera_audit_actor_idx" ON "tessera"."audit" USING btree ("actor_user_uuid","time" DESC NULLS LAST,"id" DESC NULLS LAST) WHERE actor_user_uuid is not null;--> statement-breakpoint
CREATE INDEX "tessera_audit_target_idx" ON "tessera"."audit" USING btree ("target_uuid","time" DESC NULLS LAST,"id" DESC NULLS LAST) WHERE target_uuid is not null;--> statement-breakpoint
CREATE INDEX "audit_action_idx" ON "tessera"."audit" USING btree ("action" COLLATE "C", "time" DESC, "id" DESC);
--> statement-breakpoint
-- Refusals are rare among successes: `outcome=invalid_credentials` walks this index, not the whole time range.
CREATE INDEX "audit_outcome_idx" ON "tessera"."audit" USING btree ("outcome", "time" DESC, "id" DESC);
--> statement-breakpoint
-- The canonical content a row's hash covers: every column but `id` and `hash`, as one JSON array
-- (unambiguous, NULLs included; the time as integer microseconds, whatever the session's TimeZone).
CREATE FUNCTION tessera.audit_content(a tessera.audit) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_array(a.uuid, a.tenant_uuid, a.chain_seq, round(extract(epoch FROM a.time) * 1000000)::bigint,
    a.actor_user_uuid, a.actor_session_uuid, a.actor_tenant_uuid, a.actor_address, a.actor_user_agent,
    a.action, a.target_kind, a.target_uuid, a.target_tenant_uuid, a.outcome, a.changes)::text
$$;
--> statement-breakpoint
-- An entry's id: a UUIDv7 (RFC 9562 §5.7: 48-bit Unix milliseconds, then random bits from
-- gen_random_uuid), so new ids land at the end of the uuid index instead of on a random page of it.
CREATE FUNCTION tessera.uuid_v7() RETURNS text LANGUAGE sql VOLATILE AS $$
  SELECT (lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || '7'
    || substr(r, 14, 3) || substr(r, 17, 16))::uuid::text
  FROM (SELECT replace(gen_random_uuid()::text, '-', '') AS r) x
$$;
--> statement-breakpoint
-- Appends the row to its tenant's chain. The upsert of the chain head takes its row lock, held until
-- commit: appends to one chain are serialised (a second writer of the same tenant waits for the
-- first one's commit), so the sequence has no gap and each row hashes the previous committed one.
-- The time is taken once the lock is held, so it increases along the chain (retention relies on it).
CREATE FUNCTION tessera.audit_append() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  prev bytea;
BEGIN
  INSERT INTO tessera.audit_chain AS c (tenant_uuid, seq, hash, anchor_seq, anchor_hash)
    VALUES (NEW.tenant_uuid, 1, '\x'::bytea, 0, '\x'::bytea)
    ON CONFLICT (tenant_uuid) DO UPDATE SET seq = c.seq + 1
    RETURNING c.seq, c.hash INTO NEW.chain_seq, prev;
  NEW.time := clock_timestamp();
  NEW.uuid := tessera.uuid_v7();
  NEW.hash := sha256(prev || convert_to(tessera.audit_content(NEW), 'UTF8'));
  UPDATE tessera.audit_chain SET hash = NEW.hash WHERE tenant_uuid = NEW.tenant_uuid;
  RETURN NEW;
END $$;
--> statement-breakpoint
CREATE TRIGGER audit_append BEFORE INSERT ON "tessera"."audit" FOR EACH ROW EXECUTE FUNCTION tessera.audit_append();
--> statement-breakpoint
-- Rows are never rewritten (retention deletes whole prefixes of a chain and moves its anchor).
CREATE FUNCTION tessera.audit_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit entries cannot be changed';
END $$;
--> statement-breakpoint
CREATE TRIGGER audit_immutable BEFORE UPDATE ON "tessera"."audit" FOR EACH ROW EXECUTE FUNCTION tessera.audit_immutable();
