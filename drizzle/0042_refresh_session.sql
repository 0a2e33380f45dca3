-- An OIDC refresh continues the session of the sign-in it descends from (one session per sign-in,
-- services/oidc/grants/refresh-token.ts): each refresh token row names that session, and the
-- sign-in's `sid` (OIDC Back-Channel Logout 1.0 §2.1: stable across refreshes). Ending the session
-- ends its refresh tokens (cascade, as the other session-linked tables). Rows issued before have no
-- link: their first refresh opens a session and links them to it.
ALTER TABLE "tessera_oidc_refresh_token" ADD COLUMN IF NOT EXISTS "session_uuid" varchar(38);
--> statement-breakpoint
ALTER TABLE "tessera_oidc_refresh_token" ADD COLUMN IF NOT EXISTS "sid" varchar(38);
--> statement-breakpoint
ALTER TABLE "tessera_oidc_refresh_token" DROP CONSTRAINT IF EXISTS "tessera_oidc_refresh_token_session_uuid_auth_session_uuid_fk";
--> statement-breakpoint
ALTER TABLE "tessera_oidc_refresh_token" ADD CONSTRAINT "tessera_oidc_refresh_token_session_uuid_auth_session_uuid_fk" FOREIGN KEY ("session_uuid") REFERENCES "public"."auth_session"("uuid") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_oidc_refresh_token_session_uuid_idx" ON "tessera_oidc_refresh_token" USING btree ("session_uuid");
