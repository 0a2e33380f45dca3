-- Users counted at commit (issue 41, scale). The triggers of migrations user_count and scale
-- updated the tenant's counter row, and its ancestors' subtree rows, when a user was inserted: those
-- row locks were then held to the end of the transaction, so every user creation of the platform
-- (they all count in the root tenant's subtree) waited for the one before to commit, whatever it did
-- after its insert (emails, groups, events, audit). An insert now only notes its delta for its own
-- transaction; a deferred constraint trigger folds the notes into the counters at commit, so the
-- counter rows are locked only while the transaction commits (as tessera.list_version already is).
-- A removal, a tenant's deletion and a truncation fold the transaction's notes first, so the
-- counts they read and change include the users this same transaction added.
CREATE TABLE IF NOT EXISTS "tessera"."user_count_pending" (
	"txid" bigint NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"users" integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "user_count_pending_txid_idx" ON "tessera"."user_count_pending" USING btree ("txid");
--> statement-breakpoint
CREATE OR REPLACE FUNCTION tessera.fold_user_counts() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  ts varchar[];
  ns int[];
BEGIN
  WITH done AS (DELETE FROM tessera.user_count_pending WHERE txid = txid_current() RETURNING tenant_uuid, users)
  SELECT array_agg(tenant_uuid ORDER BY tenant_uuid), array_agg(n ORDER BY tenant_uuid) INTO ts, ns
    FROM (SELECT tenant_uuid, sum(users)::int AS n FROM done GROUP BY tenant_uuid) a;
  IF ts IS NULL THEN
    RETURN;
  END IF;
  INSERT INTO tessera.tenant_user_count (tenant_uuid, users)
    SELECT d.t, d.n FROM unnest(ts, ns) AS d(t, n) ORDER BY d.t
    ON CONFLICT (tenant_uuid) DO UPDATE SET users = tessera.tenant_user_count.users + excluded.users;
  PERFORM tessera.add_subtree_users(ts, ns);
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION tessera.fold_user_counts_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- One trigger per note: the first folds them all, the others find nothing left (an index probe).
  PERFORM tessera.fold_user_counts();
  RETURN NULL;
END $$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS tessera_user_count_fold ON "tessera"."user_count_pending";
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER tessera_user_count_fold AFTER INSERT ON "tessera"."user_count_pending"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION tessera.fold_user_counts_at_commit();
--> statement-breakpoint
CREATE OR REPLACE FUNCTION tessera.count_users_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tessera.user_count_pending (txid, tenant_uuid, users)
    SELECT txid_current(), tenant_uuid, count(*) FROM tessera_added GROUP BY tenant_uuid;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION tessera.count_users_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM tessera.fold_user_counts();
  PERFORM tessera.add_subtree_users(array_agg(tenant_uuid), array_agg(-n))
    FROM (SELECT tenant_uuid, count(*)::int AS n FROM tessera_removed GROUP BY tenant_uuid) r;
  UPDATE tessera.tenant_user_count c SET users = c.users - r.n
    FROM (SELECT tenant_uuid, count(*) AS n FROM tessera_removed GROUP BY tenant_uuid) r
    WHERE c.tenant_uuid = r.tenant_uuid;
  DELETE FROM tessera.tenant_user_count WHERE users <= 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION tessera.count_users_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM tessera.user_count_pending WHERE txid = txid_current();
  DELETE FROM tessera.tenant_user_count;
  DELETE FROM tessera.tenant_subtree_users;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION tessera.tenant_deleting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM tessera.fold_user_counts();
  PERFORM tessera.add_subtree_users(ARRAY[OLD.uuid], ARRAY[-c.users]) FROM tessera.tenant_user_count c WHERE c.tenant_uuid = OLD.uuid;
  RETURN OLD;
END $$;
--> statement-breakpoint
-- The counters before tessera.list_version, in every transaction: the version's trigger is the first
-- deferred one of a transaction that adds users, and a removal locks the counters before it too, so
-- two transactions never hold one of those rows each while waiting for the other.
CREATE OR REPLACE FUNCTION tessera.raise_list_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v bigint;
BEGIN
  IF current_setting('tessera.list_version_raised', true) IS DISTINCT FROM txid_current()::text THEN
    PERFORM tessera.fold_user_counts();
    UPDATE tessera.list_version SET version = version + 1 WHERE id = 1 RETURNING version INTO v;
    PERFORM pg_notify('tessera_list_version', v::text);
    PERFORM set_config('tessera.list_version_raised', txid_current()::text, true);
  END IF;
  RETURN NULL;
END $$;
