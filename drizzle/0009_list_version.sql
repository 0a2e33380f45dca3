-- What the admin lists read has a version number, raised by every committed change (services/list-cache.ts).
CREATE TABLE "tessera"."list_version" (
	"id" smallint PRIMARY KEY NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
INSERT INTO "tessera"."list_version" ("id", "version") VALUES (1, 0);
--> statement-breakpoint
-- Raises tessera.list_version once per transaction that changes what an admin list reads. It runs
-- as a deferred constraint trigger, i.e. at commit: the row lock it takes is held only while the
-- transaction commits (no other lock is taken after it, so it adds no deadlock), and the raised
-- number becomes visible together with the change it announces. The new number is also notified
-- (delivered at commit): an embedded PGlite hears its own commits before they return.
CREATE FUNCTION tessera.raise_list_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v bigint;
BEGIN
  IF current_setting('tessera.list_version_raised', true) IS DISTINCT FROM txid_current()::text THEN
    UPDATE tessera.list_version SET version = version + 1 WHERE id = 1 RETURNING version INTO v;
    PERFORM pg_notify('tessera_list_version', v::text);
    PERFORM set_config('tessera.list_version_raised', txid_current()::text, true);
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- TRUNCATE has no row triggers: raised at once (the truncation locks the table until commit anyway).
CREATE FUNCTION tessera.raise_list_version_now() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v bigint;
BEGIN
  UPDATE tessera.list_version SET version = version + 1 WHERE id = 1 RETURNING version INTO v;
  PERFORM pg_notify('tessera_list_version', v::text);
  RETURN NULL;
END $$;
--> statement-breakpoint
-- auth_user: every column a list shows or filters on; a password change (or a rehash at login) is not one.
CREATE CONSTRAINT TRIGGER tessera_list_version AFTER INSERT OR DELETE OR UPDATE OF "uuid", "username", "firstname", "lastname", "enabled", "tenant_uuid", "purpose", "authentication_method" ON "auth_user"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION tessera.raise_list_version();
--> statement-breakpoint
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['auth_email', 'auth_user_group', 'auth_user_policy', 'auth_group_policy', 'auth_policy', 'auth_group', 'auth_tenant'] LOOP
    EXECUTE format('CREATE CONSTRAINT TRIGGER tessera_list_version AFTER INSERT OR DELETE OR UPDATE ON %I
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION tessera.raise_list_version()', t);
  END LOOP;
  FOREACH t IN ARRAY ARRAY['auth_user', 'auth_email', 'auth_user_group', 'auth_user_policy', 'auth_group_policy', 'auth_policy', 'auth_group', 'auth_tenant'] LOOP
    EXECUTE format('CREATE TRIGGER tessera_list_version_truncated AFTER TRUNCATE ON %I
      FOR EACH STATEMENT EXECUTE FUNCTION tessera.raise_list_version_now()', t);
  END LOOP;
END $$;
