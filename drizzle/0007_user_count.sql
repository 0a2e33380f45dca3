-- Keeps tessera.tenant_user_count in step with auth_user, so a list's `total` reads a few counter
-- rows instead of counting every user. Statement-level triggers with transition tables: a bulk
-- insert or a tenant's cascaded delete updates each counter once; a TRUNCATE (an import empties
-- the tables first) empties the counters, which the copied rows then rebuild.
CREATE FUNCTION tessera.count_users_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tessera.tenant_user_count (tenant_uuid, users)
    SELECT tenant_uuid, count(*) FROM tessera_added GROUP BY tenant_uuid
    ON CONFLICT (tenant_uuid) DO UPDATE SET users = tessera.tenant_user_count.users + excluded.users;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION tessera.count_users_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE tessera.tenant_user_count c SET users = c.users - r.n
    FROM (SELECT tenant_uuid, count(*) AS n FROM tessera_removed GROUP BY tenant_uuid) r
    WHERE c.tenant_uuid = r.tenant_uuid;
  DELETE FROM tessera.tenant_user_count WHERE users <= 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION tessera.count_users_moved() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  -- Only rows whose tenant changed count (Tessera never moves users; an import might): other
  -- updates (names, passwords) write nothing here, so they never wait on a counter row.
  FOR r IN SELECT o.tenant_uuid AS old_t, n.tenant_uuid AS new_t FROM tessera_removed o JOIN tessera_added n ON n.uuid = o.uuid
           WHERE o.tenant_uuid <> n.tenant_uuid LOOP
    INSERT INTO tessera.tenant_user_count (tenant_uuid, users) VALUES (r.new_t, 1)
      ON CONFLICT (tenant_uuid) DO UPDATE SET users = tessera.tenant_user_count.users + 1;
    UPDATE tessera.tenant_user_count SET users = users - 1 WHERE tenant_uuid = r.old_t;
    DELETE FROM tessera.tenant_user_count WHERE tenant_uuid = r.old_t AND users <= 0;
  END LOOP;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION tessera.count_users_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM tessera.tenant_user_count;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER tessera_count_users_added AFTER INSERT ON "auth_user"
  REFERENCING NEW TABLE AS tessera_added FOR EACH STATEMENT EXECUTE FUNCTION tessera.count_users_added();
--> statement-breakpoint
CREATE TRIGGER tessera_count_users_removed AFTER DELETE ON "auth_user"
  REFERENCING OLD TABLE AS tessera_removed FOR EACH STATEMENT EXECUTE FUNCTION tessera.count_users_removed();
--> statement-breakpoint
CREATE TRIGGER tessera_count_users_moved AFTER UPDATE ON "auth_user"
  REFERENCING OLD TABLE AS tessera_removed NEW TABLE AS tessera_added FOR EACH STATEMENT EXECUTE FUNCTION tessera.count_users_moved();
--> statement-breakpoint
CREATE TRIGGER tessera_count_users_truncated AFTER TRUNCATE ON "auth_user"
  FOR EACH STATEMENT EXECUTE FUNCTION tessera.count_users_truncated();
--> statement-breakpoint
INSERT INTO tessera.tenant_user_count (tenant_uuid, users) SELECT tenant_uuid, count(*) FROM "auth_user" GROUP BY tenant_uuid;
