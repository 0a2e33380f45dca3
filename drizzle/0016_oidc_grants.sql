CREATE TABLE "tessera_oidc_access_token" (
	"token_uuid" varchar(38) PRIMARY KEY NOT NULL,
	"session_uuid" varchar(38) NOT NULL,
	"client_id" varchar(38) NOT NULL,
	"user_uuid" varchar(38),
	"grant_type" text NOT NULL,
	"scope" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tessera_oidc_device_code" (
	"device_code_hash" varchar(64) PRIMARY KEY NOT NULL,
	"user_code" varchar(16) NOT NULL,
	"client_id" varchar(38) NOT NULL,
	"scope" text NOT NULL,
	"status" varchar(16) DEFAULT 'pending' NOT NULL,
	"interval" integer NOT NULL,
	"last_polled_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL,
	"user_uuid" varchar(38),
	"token_uuid" varchar(38),
	"session_uuid" varchar(38),
	"auth_time" integer,
	"amr" jsonb,
	CONSTRAINT "tessera_oidc_device_code_user_code_key" UNIQUE("user_code")
);
--> statement-breakpoint
CREATE TABLE "tessera_oidc_refresh_token" (
	"token_hash" varchar(64) PRIMARY KEY NOT NULL,
	"family_uuid" varchar(38) NOT NULL,
	"client_id" varchar(38) NOT NULL,
	"user_uuid" varchar(38) NOT NULL,
	"scope" text NOT NULL,
	"auth_time" integer NOT NULL,
	"amr" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone,
	"rotated_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "tessera_oidc_client" ADD COLUMN "acl" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "tessera_oidc_access_token" ADD CONSTRAINT "tessera_oidc_access_token_session_uuid_auth_session_uuid_fk" FOREIGN KEY ("session_uuid") REFERENCES "public"."auth_session"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_oidc_access_token" ADD CONSTRAINT "tessera_oidc_access_token_client_id_tessera_oidc_client_client_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."tessera_oidc_client"("client_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_oidc_device_code" ADD CONSTRAINT "tessera_oidc_device_code_client_id_tessera_oidc_client_client_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."tessera_oidc_client"("client_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_oidc_device_code" ADD CONSTRAINT "tessera_oidc_device_code_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_oidc_device_code" ADD CONSTRAINT "tessera_oidc_device_code_session_uuid_auth_session_uuid_fk" FOREIGN KEY ("session_uuid") REFERENCES "public"."auth_session"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_oidc_refresh_token" ADD CONSTRAINT "tessera_oidc_refresh_token_family_uuid_auth_refresh_token_uuid_fk" FOREIGN KEY ("family_uuid") REFERENCES "public"."auth_refresh_token"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_oidc_refresh_token" ADD CONSTRAINT "tessera_oidc_refresh_token_client_id_tessera_oidc_client_client_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."tessera_oidc_client"("client_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_oidc_refresh_token" ADD CONSTRAINT "tessera_oidc_refresh_token_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tessera_oidc_access_token_session_uuid_idx" ON "tessera_oidc_access_token" USING btree ("session_uuid");--> statement-breakpoint
CREATE INDEX "tessera_oidc_device_code_expires_at_idx" ON "tessera_oidc_device_code" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "tessera_oidc_refresh_token_family_uuid_idx" ON "tessera_oidc_refresh_token" USING btree ("family_uuid");