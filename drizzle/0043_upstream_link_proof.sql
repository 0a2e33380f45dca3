-- Issue 40 item 3: a sign-in back from an upstream provider whose verified email is an existing account's
-- waits for that account's password (the page shown on return); the account it would link is kept here.
ALTER TABLE "tessera_upstream_oidc_login" ADD COLUMN IF NOT EXISTS "link_user_uuid" varchar(38);--> statement-breakpoint
DO $$ BEGIN
  ALTER TABLE "tessera_upstream_oidc_login" ADD CONSTRAINT "tessera_upstream_oidc_login_link_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("link_user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;
