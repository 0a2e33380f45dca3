-- Logout with upstream OpenID providers (issue 40 item 5, docs/federation.md "Logout"): a provider may
-- send the browser to its end_session_endpoint when a session that signed in through it logs out at
-- Tessera (RP-Initiated Logout 1.0), and each upstream sign-in is remembered with the Tessera browser
-- session it started, so that the provider's back-channel logout (Back-Channel Logout 1.0) ends it.
ALTER TABLE "tessera_upstream_oidc_provider" ADD COLUMN IF NOT EXISTS "upstream_logout" boolean DEFAULT false NOT NULL;
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "tessera_upstream_oidc_session" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"provider_uuid" varchar(38) NOT NULL,
	"subject" text NOT NULL,
	"sid" text,
	"id_token" text,
	"completion_hash" text,
	"browser_session_id" varchar(38),
	"session_uuid" varchar(38),
	"expires_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tessera_upstream_oidc_session_completion_key" UNIQUE("completion_hash"),
	CONSTRAINT "tessera_upstream_oidc_session_provider_uuid_fk" FOREIGN KEY ("provider_uuid") REFERENCES "public"."tessera_upstream_oidc_provider"("uuid") ON DELETE cascade ON UPDATE no action,
	CONSTRAINT "tessera_upstream_oidc_session_browser_session_fk" FOREIGN KEY ("browser_session_id") REFERENCES "public"."tessera_oidc_browser_session"("uuid") ON DELETE cascade ON UPDATE no action
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_upstream_oidc_session_sid_idx" ON "tessera_upstream_oidc_session" USING btree ("provider_uuid","sid");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_upstream_oidc_session_subject_idx" ON "tessera_upstream_oidc_session" USING btree ("provider_uuid","subject");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_upstream_oidc_session_browser_idx" ON "tessera_upstream_oidc_session" USING btree ("browser_session_id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_upstream_oidc_session_expires_idx" ON "tessera_upstream_oidc_session" USING btree ("expires_at");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "tessera_upstream_oidc_logout" (
	"state_hash" text PRIMARY KEY NOT NULL,
	"provider_uuid" varchar(38) NOT NULL,
	"continue_url" text,
	"tenant_uuid" varchar(38),
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "tessera_upstream_oidc_logout_provider_uuid_fk" FOREIGN KEY ("provider_uuid") REFERENCES "public"."tessera_upstream_oidc_provider"("uuid") ON DELETE cascade ON UPDATE no action
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_upstream_oidc_logout_expires_idx" ON "tessera_upstream_oidc_logout" USING btree ("expires_at");
