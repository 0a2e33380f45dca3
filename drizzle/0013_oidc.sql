CREATE TABLE "tessera_oidc_client" (
	"client_id" varchar(38) PRIMARY KEY NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"name" text NOT NULL,
	"client_type" varchar(16) NOT NULL,
	"secret_hash" text,
	"redirect_uris" jsonb NOT NULL,
	"post_logout_redirect_uris" jsonb NOT NULL,
	"grant_types" jsonb NOT NULL,
	"scopes" jsonb NOT NULL,
	"first_party" boolean DEFAULT false NOT NULL,
	"id_token_signed_response_alg" varchar(16) NOT NULL,
	"access_token_lifetime" integer,
	"id_token_lifetime" integer,
	"refresh_token_lifetime" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tessera_oidc_code" (
	"code_hash" varchar(64) PRIMARY KEY NOT NULL,
	"client_id" varchar(38) NOT NULL,
	"user_uuid" varchar(38) NOT NULL,
	"token_uuid" varchar(38) NOT NULL,
	"session_uuid" varchar(38) NOT NULL,
	"redirect_uri" text NOT NULL,
	"scope" text NOT NULL,
	"nonce" text,
	"code_challenge" text,
	"auth_time" integer NOT NULL,
	"amr" jsonb NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "tessera_oidc_key" (
	"kid" varchar(64) PRIMARY KEY NOT NULL,
	"alg" varchar(16) NOT NULL,
	"public_jwk" jsonb NOT NULL,
	"private_key" text NOT NULL,
	"encrypted" boolean NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"retired_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "tessera_oidc_client" ADD CONSTRAINT "tessera_oidc_client_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_oidc_code" ADD CONSTRAINT "tessera_oidc_code_client_id_tessera_oidc_client_client_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."tessera_oidc_client"("client_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_oidc_code" ADD CONSTRAINT "tessera_oidc_code_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_oidc_code" ADD CONSTRAINT "tessera_oidc_code_session_uuid_auth_session_uuid_fk" FOREIGN KEY ("session_uuid") REFERENCES "public"."auth_session"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tessera_oidc_client_tenant_uuid_idx" ON "tessera_oidc_client" USING btree ("tenant_uuid");--> statement-breakpoint
CREATE INDEX "tessera_oidc_code_token_uuid_idx" ON "tessera_oidc_code" USING btree ("token_uuid");--> statement-breakpoint
CREATE INDEX "tessera_oidc_code_session_uuid_idx" ON "tessera_oidc_code" USING btree ("session_uuid");--> statement-breakpoint
CREATE INDEX "tessera_oidc_key_alg_idx" ON "tessera_oidc_key" USING btree ("alg","created_at");