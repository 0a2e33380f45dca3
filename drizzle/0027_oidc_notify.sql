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
