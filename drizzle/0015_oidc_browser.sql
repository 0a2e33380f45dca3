CREATE TABLE "tessera_oidc_browser_session" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"cookie_hash" varchar(64) NOT NULL,
	"user_uuid" varchar(38) NOT NULL,
	"login" text NOT NULL,
	"auth_time" integer NOT NULL,
	"amr" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "tessera_oidc_browser_session_cookie_hash_unique" UNIQUE("cookie_hash")
);
--> statement-breakpoint
CREATE TABLE "tessera_oidc_consent" (
	"user_uuid" varchar(38) NOT NULL,
	"client_id" varchar(38) NOT NULL,
	"scopes" jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tessera_oidc_consent_user_uuid_client_id_pk" PRIMARY KEY("user_uuid","client_id")
);
--> statement-breakpoint
ALTER TABLE "tessera_oidc_code" ADD COLUMN "browser_session_id" varchar(38);--> statement-breakpoint
ALTER TABLE "tessera_oidc_browser_session" ADD CONSTRAINT "tessera_oidc_browser_session_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_oidc_consent" ADD CONSTRAINT "tessera_oidc_consent_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_oidc_consent" ADD CONSTRAINT "tessera_oidc_consent_client_id_tessera_oidc_client_client_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."tessera_oidc_client"("client_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tessera_oidc_browser_session_user_idx" ON "tessera_oidc_browser_session" USING btree ("user_uuid");--> statement-breakpoint
CREATE INDEX "tessera_oidc_consent_client_idx" ON "tessera_oidc_consent" USING btree ("client_id");--> statement-breakpoint
ALTER TABLE "tessera_oidc_code" ADD CONSTRAINT "tessera_oidc_code_browser_session_id_tessera_oidc_browser_session_uuid_fk" FOREIGN KEY ("browser_session_id") REFERENCES "public"."tessera_oidc_browser_session"("uuid") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tessera_oidc_code_browser_session_idx" ON "tessera_oidc_code" USING btree ("browser_session_id");