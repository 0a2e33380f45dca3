-- Every change to the tenant tree is announced on commit, so every instance refreshes the copy of
-- the tree its token checks use.
CREATE FUNCTION tessera_notify_tenants() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tessera_tenants_changed', '');
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER tessera_tenants_changed AFTER INSERT OR UPDATE OF parent_uuid OR DELETE ON "auth_tenant"
  FOR EACH STATEMENT EXECUTE FUNCTION tessera_notify_tenants();
