-- Scale (issue 29). GET /tenants walks this index in its default order (name, then uuid) instead of
-- sorting every tenant to show the first page.
CREATE INDEX "auth_tenant_name_uuid_idx" ON "auth_tenant" USING btree ("name","uuid");
--> statement-breakpoint
-- The number of users in each tenant's subtree (the tenant and every descendant), kept by the
-- triggers that keep tessera.tenant_user_count (migration user_count): a user added, removed or moved
-- changes the row of its tenant and of each ancestor (the segments of its materialised path, at most
-- the depth of the tree), and a tenant moved takes its subtree's count from its old ancestors to its
-- new ones. So `GET /users?recurse=true` reads its `total` in one row instead of summing a counter per
-- tenant of the subtree (19,608 rows: ~230 ms). Rows appear on first use; a missing row is 0.
CREATE TABLE "tessera"."tenant_subtree_users" (
	"tenant_uuid" varchar(38) PRIMARY KEY NOT NULL REFERENCES "auth_tenant"("uuid") ON DELETE CASCADE,
	"users" integer NOT NULL
);
--> statement-breakpoint
-- Adds deltas[i] users to tenants[i] and to each of its ancestors. Tenants no longer in auth_tenant
-- are skipped: a tenant being deleted already took its users off its ancestors (tenant_deleting).
-- Rows are locked in uuid order, so two concurrent changes never wait on each other crosswise.
CREATE FUNCTION tessera.add_subtree_users(tenants varchar[], deltas int[]) RETURNS void LANGUAGE sql AS $$
  INSERT INTO tessera.tenant_subtree_users (tenant_uuid, users)
  SELECT a.uuid, sum(d.delta) FROM unnest(tenants, deltas) AS d(tenant_uuid, delta)
    JOIN auth_tenant t ON t.uuid = d.tenant_uuid
    JOIN tessera.tenant_path p ON p.tenant_uuid = d.tenant_uuid
    CROSS JOIN LATERAL string_to_table(btrim(p.path, '/'), '/') AS a(uuid)
  GROUP BY a.uuid HAVING sum(d.delta) <> 0 ORDER BY a.uuid
  ON CONFLICT (tenant_uuid) DO UPDATE SET users = tessera.tenant_subtree_users.users + excluded.users
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION tessera.count_users_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tessera.tenant_user_count (tenant_uuid, users)
    SELECT tenant_uuid, count(*) FROM tessera_added GROUP BY tenant_uuid
    ON CONFLICT (tenant_uuid) DO UPDATE SET users = tessera.tenant_user_count.users + excluded.users;
  PERFORM tessera.add_subtree_users(array_agg(tenant_uuid), array_agg(n))
    FROM (SELECT tenant_uuid, count(*)::int AS n FROM tessera_added GROUP BY tenant_uuid) a;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION tessera.count_users_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM tessera.add_subtree_users(array_agg(tenant_uuid), array_agg(-n))
    FROM (SELECT tenant_uuid, count(*)::int AS n FROM tessera_removed GROUP BY tenant_uuid) r;
  UPDATE tessera.tenant_user_count c SET users = c.users - r.n
    FROM (SELECT tenant_uuid, count(*) AS n FROM tessera_removed GROUP BY tenant_uuid) r
    WHERE c.tenant_uuid = r.tenant_uuid;
  DELETE FROM tessera.tenant_user_count WHERE users <= 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION tessera.count_users_moved() RETURNS trigger LANGUAGE plpgsql AS $$
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
    PERFORM tessera.add_subtree_users(ARRAY[r.new_t, r.old_t], ARRAY[1, -1]);
  END LOOP;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION tessera.count_users_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM tessera.tenant_user_count;
  DELETE FROM tessera.tenant_subtree_users;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- A tenant deleted (its users go by cascade, after it): its own users leave its ancestors' counts
-- now, while its path is still there; the cascaded user deletions then skip it (add_subtree_users).
CREATE FUNCTION tessera.tenant_deleting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM tessera.add_subtree_users(ARRAY[OLD.uuid], ARRAY[-c.users]) FROM tessera.tenant_user_count c WHERE c.tenant_uuid = OLD.uuid;
  RETURN OLD;
END $$;
--> statement-breakpoint
CREATE TRIGGER tessera_tenant_deleting BEFORE DELETE ON "auth_tenant" FOR EACH ROW EXECUTE FUNCTION tessera.tenant_deleting();
--> statement-breakpoint
INSERT INTO tessera.tenant_subtree_users (tenant_uuid, users)
  SELECT a.uuid, sum(c.users) FROM tessera.tenant_user_count c
    JOIN tessera.tenant_path p ON p.tenant_uuid = c.tenant_uuid
    CROSS JOIN LATERAL string_to_table(btrim(p.path, '/'), '/') AS a(uuid)
  GROUP BY a.uuid;
--> statement-breakpoint
-- A new tenant's path is its parent's plus its own uuid (one index read), walking up the tree only
-- for tenants whose parent is inserted by the same statement (a bulk load).
CREATE OR REPLACE FUNCTION tessera.tenant_path_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tessera.tenant_path SELECT n.uuid, p.path || n.uuid || '/' FROM tessera_new n
    JOIN tessera.tenant_path p ON p.tenant_uuid = n.parent_uuid WHERE n.uuid <> n.parent_uuid;
  INSERT INTO tessera.tenant_path SELECT * FROM tessera.tenant_paths((SELECT array_agg(n.uuid) FROM tessera_new n
    WHERE NOT EXISTS (SELECT 1 FROM tessera.tenant_path p WHERE p.tenant_uuid = n.uuid)));
  RETURN NULL;
END $$;
--> statement-breakpoint
-- A move rewrites the prefix of the tenant and of every descendant (one indexed range each), and
-- takes the subtree's users from the old ancestors to the new ones.
CREATE OR REPLACE FUNCTION tessera.tenant_path_moved() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  moved record;
  old_prefix text;
  new_prefix text;
  below int;
BEGIN
  FOR moved IN SELECT n.uuid FROM tessera_new n JOIN tessera_old o ON o.uuid = n.uuid WHERE o.parent_uuid IS DISTINCT FROM n.parent_uuid LOOP
    SELECT p.path INTO old_prefix FROM tessera.tenant_path p WHERE p.tenant_uuid = moved.uuid;
    SELECT p.path INTO new_prefix FROM tessera.tenant_paths(ARRAY[moved.uuid]) p;
    UPDATE tessera.tenant_path SET path = new_prefix || substr(path, length(old_prefix) + 1)
      WHERE path >= old_prefix AND path < left(old_prefix, -1) || '0';
    SELECT s.users INTO below FROM tessera.tenant_subtree_users s WHERE s.tenant_uuid = moved.uuid;
    IF coalesce(below, 0) <> 0 THEN
      INSERT INTO tessera.tenant_subtree_users (tenant_uuid, users)
      SELECT a.uuid, sum(a.delta) FROM (
          SELECT u, -below FROM string_to_table(btrim(old_prefix, '/'), '/') u WHERE u <> moved.uuid
          UNION ALL
          SELECT u, below FROM string_to_table(btrim(new_prefix, '/'), '/') u WHERE u <> moved.uuid
        ) AS a(uuid, delta)
      GROUP BY a.uuid HAVING sum(a.delta) <> 0 ORDER BY a.uuid
      ON CONFLICT (tenant_uuid) DO UPDATE SET users = tessera.tenant_subtree_users.users + excluded.users;
    END IF;
  END LOOP;
  RETURN NULL;
END $$;
