-- Seed rows of the wazo-auth baseline (wazo-auth's data model "Seed data").
INSERT INTO "auth_access" ("access") VALUES ('#');
--> statement-breakpoint
DO $$
DECLARE
  master_uuid text := gen_random_uuid()::text;
  policy_uuid text := gen_random_uuid()::text;
BEGIN
  INSERT INTO "auth_tenant" ("uuid", "name", "slug", "parent_uuid", "default_authentication_method")
    VALUES (master_uuid, 'master', 'master', master_uuid, 'native');
  INSERT INTO "auth_group" ("name", "slug", "tenant_uuid", "system_managed")
    VALUES ('wazo-all-users-tenant-' || master_uuid, 'wazo-all-users-tenant-' || master_uuid, master_uuid, true);
  INSERT INTO "auth_policy" ("uuid", "name", "slug", "description", "tenant_uuid", "config_managed", "shared")
    VALUES (policy_uuid, 'wazo_default_master_user_policy', 'wazo_default_master_user_policy',
            'Default Wazo master user policy. Do not modify: it is managed by the service.', master_uuid, false, false);
  INSERT INTO "auth_policy_access" ("policy_uuid", "access_id")
    SELECT policy_uuid, "id" FROM "auth_access" WHERE "access" = '#';
END $$;
--> statement-breakpoint
-- Every deleted token (revoked, expired, or cascaded from its session, user or tenant) is announced
-- on commit, so every instance drops it from its token cache.
CREATE FUNCTION tessera_notify_token_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tessera_token_deleted', OLD.uuid);
  RETURN OLD;
END $$;
--> statement-breakpoint
CREATE TRIGGER tessera_token_deleted AFTER DELETE ON "auth_token"
  FOR EACH ROW EXECUTE FUNCTION tessera_notify_token_deleted();
