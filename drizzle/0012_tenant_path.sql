-- Each tenant's materialised path ('/<master>/<…>/<uuid>/', bytewise collation), kept by triggers
-- whoever writes auth_tenant (this version, the previous one during a rolling upgrade, an import),
-- so a subtree is one range of an index ([path, path with its last '/' raised to '0')) instead of
-- a recursive walk of the tree (~0.5 s for a 20,000-tenant subtree). Lists use it for tenant
-- isolation (services/identity/tenant-tree.ts).
CREATE TABLE "tessera"."tenant_path" (
	"tenant_uuid" varchar(38) PRIMARY KEY NOT NULL REFERENCES "auth_tenant"("uuid") ON DELETE CASCADE,
	"path" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE INDEX "tenant_path_path_idx" ON "tessera"."tenant_path" ("path");
--> statement-breakpoint
-- Paths of the given tenants, walked up to the master tenant (the row that is its own parent).
CREATE FUNCTION tessera.tenant_paths(uuids varchar[]) RETURNS TABLE (tenant_uuid varchar, path text) LANGUAGE sql STABLE AS $$
  WITH RECURSIVE up(start, uuid, parent, path) AS (
    SELECT t.uuid, t.uuid, t.parent_uuid, t.uuid || '/' FROM auth_tenant t WHERE t.uuid = ANY(uuids)
    UNION ALL
    SELECT up.start, p.uuid, p.parent_uuid, p.uuid || '/' || up.path FROM up JOIN auth_tenant p ON p.uuid = up.parent
    WHERE up.uuid <> up.parent
  ) SELECT start, '/' || path FROM up WHERE uuid = parent
$$;
--> statement-breakpoint
INSERT INTO "tessera"."tenant_path" SELECT * FROM tessera.tenant_paths((SELECT array_agg(uuid) FROM auth_tenant));
--> statement-breakpoint
CREATE FUNCTION tessera.tenant_path_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tessera.tenant_path SELECT * FROM tessera.tenant_paths((SELECT array_agg(uuid) FROM tessera_new));
  RETURN NULL;
END $$;
--> statement-breakpoint
-- A move rewrites the prefix of the tenant and of every descendant (one indexed range each).
CREATE FUNCTION tessera.tenant_path_moved() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  moved record;
  old_prefix text;
  new_prefix text;
BEGIN
  FOR moved IN SELECT n.uuid FROM tessera_new n JOIN tessera_old o ON o.uuid = n.uuid WHERE o.parent_uuid IS DISTINCT FROM n.parent_uuid LOOP
    SELECT p.path INTO old_prefix FROM tessera.tenant_path p WHERE p.tenant_uuid = moved.uuid;
    SELECT p.path INTO new_prefix FROM tessera.tenant_paths(ARRAY[moved.uuid]) p;
    UPDATE tessera.tenant_path SET path = new_prefix || substr(path, length(old_prefix) + 1)
      WHERE path >= old_prefix AND path < left(old_prefix, -1) || '0';
  END LOOP;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER tessera_tenant_path_inserted AFTER INSERT ON "auth_tenant"
  REFERENCING NEW TABLE AS tessera_new FOR EACH STATEMENT EXECUTE FUNCTION tessera.tenant_path_inserted();
--> statement-breakpoint
CREATE TRIGGER tessera_tenant_path_moved AFTER UPDATE ON "auth_tenant"
  REFERENCING OLD TABLE AS tessera_old NEW TABLE AS tessera_new FOR EACH STATEMENT EXECUTE FUNCTION tessera.tenant_path_moved();
