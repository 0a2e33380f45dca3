-- Every instance keeps OpenID Connect clients (client authentication) and the JWK Set in memory: a
-- change announces itself on commit so that the others drop their copy at once. 'client:<id>' for a
-- client inserted, updated or deleted (a tenant's deletion cascades here too); 'keys' for any change
-- to the signing keys (a rotation, a key generated at first start).
CREATE FUNCTION tessera_notify_oidc_client() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tessera_oidc_changed', 'client:' || CASE WHEN TG_OP = 'INSERT' THEN NEW.client_id ELSE OLD.client_id END);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER tessera_oidc_client_changed AFTER INSERT OR UPDATE OR DELETE ON "tessera_oidc_client"
  FOR EACH ROW EXECUTE FUNCTION tessera_notify_oidc_client();
--> statement-breakpoint
CREATE FUNCTION tessera_notify_oidc_keys() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tessera_oidc_changed', 'keys');
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER tessera_oidc_keys_changed AFTER INSERT OR UPDATE OR DELETE ON "tessera_oidc_key"
  FOR EACH STATEMENT EXECUTE FUNCTION tessera_notify_oidc_keys();
--> statement-breakpoint
-- The outbox's NOTIFY wakes the bus publishers, but a transaction that sent NOTIFY holds the
-- server's one notification lock from its pre-commit until its commit record is flushed: every
-- event-writing commit (each login, each client credentials grant) waited for the previous one's
-- WAL flush. Publishers now say they listen (a row each, refreshed every minute; they also poll every
-- second), and without one listening nothing is notified. Forgotten rows (a crashed instance) only
-- bring back the notices for two minutes.
CREATE TABLE "tessera"."outbox_listener" (
	"instance_id" varchar(64) PRIMARY KEY NOT NULL,
	"seen_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE OR REPLACE FUNCTION tessera_notify_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM tessera.outbox_listener WHERE seen_at > now() - interval '2 minutes') THEN
    PERFORM pg_notify('tessera_outbox', '');
  END IF;
  RETURN NULL;
END $$;
