-- Up to eight chains (lanes) per tenant. With one chain, every writer of a tenant held its head's
-- row lock until commit, so a tenant's logins and administrative writes committed one at a time:
-- −19 % logins and −22 % admin writes with four connections (docs/audit.md, Cost). Now a writer
-- takes the first lane nobody holds, opening a new one (up to eight) when all are held, and waits
-- only when the eight are busy. Each lane is a chain of its own, verified on its own.
ALTER TABLE "tessera"."audit_chain" ADD COLUMN "lane" smallint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "tessera"."audit_chain" DROP CONSTRAINT "audit_chain_pkey";--> statement-breakpoint
ALTER TABLE "tessera"."audit_chain" ADD CONSTRAINT "audit_chain_tenant_uuid_lane_pk" PRIMARY KEY("tenant_uuid","lane");--> statement-breakpoint
ALTER TABLE "tessera"."audit" ADD COLUMN "chain_lane" smallint DEFAULT 0 NOT NULL;--> statement-breakpoint
DROP INDEX "tessera"."tessera_audit_chain_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "tessera_audit_chain_idx" ON "tessera"."audit" USING btree ("tenant_uuid","chain_lane","chain_seq");
--> statement-breakpoint
-- The two hand-written indexes (migration audit) in the order of the others, which drizzle writes
-- `DESC NULLS LAST`: a page's ORDER BY (services/audit/query.ts) must match an index's nulls
-- placement to be read from it rather than sorted.
DROP INDEX "tessera"."audit_action_idx";--> statement-breakpoint
CREATE INDEX "audit_action_idx" ON "tessera"."audit" USING btree ("action" COLLATE "C", "time" DESC NULLS LAST, "id" DESC NULLS LAST);--> statement-breakpoint
DROP INDEX "tessera"."audit_outcome_idx";--> statement-breakpoint
CREATE INDEX "audit_outcome_idx" ON "tessera"."audit" USING btree ("outcome", "time" DESC NULLS LAST, "id" DESC NULLS LAST);
--> statement-breakpoint
-- Appends the row to one of its tenant's chains. The lane's head row stays locked until commit, so
-- appends to one lane are serialised (no gap; each row hashes the previous committed one of its
-- lane); `SKIP LOCKED` lets a second writer of the tenant take another lane instead of waiting
-- (a lane this transaction already holds is not skipped: it is not locked against itself). When
-- every lane is held, the writer opens a new one; an advisory lock per (tenant, lane) keeps two
-- writers from opening the same lane (the second would wait for the first's commit). Only when all
-- eight are held does a writer wait, for a lane chosen by its backend so waiters spread. The content
-- hashed is the same as before (migration audit): the lane is part of the chain's key, not of the
-- row's content, so entries written before this migration still verify.
CREATE OR REPLACE FUNCTION tessera.audit_append() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  max_lanes CONSTANT int := 8;
  h_lane int;
  h_seq bigint;
  h_hash bytea;
  r text;
BEGIN
  LOOP
    SELECT c.lane, c.seq, c.hash INTO h_lane, h_seq, h_hash FROM tessera.audit_chain c
      WHERE c.tenant_uuid = NEW.tenant_uuid ORDER BY c.lane LIMIT 1 FOR UPDATE SKIP LOCKED;
    EXIT WHEN FOUND;
    FOR l IN 0 .. max_lanes - 1 LOOP
      CONTINUE WHEN EXISTS (SELECT 1 FROM tessera.audit_chain c WHERE c.tenant_uuid = NEW.tenant_uuid AND c.lane = l)
        OR NOT pg_try_advisory_xact_lock(hashtext('tessera.audit_chain ' || NEW.tenant_uuid), l);
      INSERT INTO tessera.audit_chain (tenant_uuid, lane, seq, hash, anchor_seq, anchor_hash)
        VALUES (NEW.tenant_uuid, l, 0, '\x'::bytea, 0, '\x'::bytea)
        ON CONFLICT DO NOTHING
        RETURNING lane, seq, hash INTO h_lane, h_seq, h_hash;
      EXIT WHEN FOUND;
    END LOOP;
    EXIT WHEN h_lane IS NOT NULL;
    -- Every lane is held or being opened: wait for one of those that exist.
    SELECT c.lane, c.seq, c.hash INTO h_lane, h_seq, h_hash FROM tessera.audit_chain c
      WHERE c.tenant_uuid = NEW.tenant_uuid ORDER BY (c.lane + pg_backend_pid()) % max_lanes LIMIT 1 FOR UPDATE;
    EXIT WHEN FOUND;
    -- None exists yet (the tenant's first lanes are all being opened): wait for the first opener.
    PERFORM pg_sleep(0.01);
  END LOOP;
  NEW.chain_lane := h_lane;
  NEW.chain_seq := h_seq + 1;
  NEW.time := clock_timestamp();
  -- tessera.uuid_v7() and tessera.audit_content(NEW), written out: as plain expressions PL/pgSQL
  -- evaluates them without starting a query each (a third of the trigger's time when they were
  -- calls). tests/audit.test.ts checks that `verify`, which calls audit_content, agrees.
  r := replace(gen_random_uuid()::text, '-', '');
  NEW.uuid := (lpad(to_hex(floor(extract(epoch FROM NEW.time) * 1000)::bigint), 12, '0') || '7'
    || substr(r, 14, 3) || substr(r, 17, 16))::uuid::text;
  NEW.hash := sha256(h_hash || convert_to(jsonb_build_array(NEW.uuid, NEW.tenant_uuid, NEW.chain_seq,
    round(extract(epoch FROM NEW.time) * 1000000)::bigint, NEW.actor_user_uuid, NEW.actor_session_uuid,
    NEW.actor_tenant_uuid, NEW.actor_address, NEW.actor_user_agent, NEW.action, NEW.target_kind, NEW.target_uuid,
    NEW.target_tenant_uuid, NEW.outcome, NEW.changes)::text, 'UTF8'));
  UPDATE tessera.audit_chain SET seq = NEW.chain_seq, hash = NEW.hash
    WHERE tenant_uuid = NEW.tenant_uuid AND lane = h_lane;
  RETURN NEW;
END $$;
