-- Upstream OpenID Connect providers per tenant (issue 40): the providers, the links between users and
-- upstream subjects, and the sign-ins under way (state, nonce, PKCE verifier), used once.
CREATE TABLE IF NOT EXISTS "tessera_upstream_oidc_provider" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"name" text NOT NULL,
	"display_name" text NOT NULL,
	"preset" text DEFAULT 'oidc' NOT NULL,
	"issuer" text NOT NULL,
	"client_id" text NOT NULL,
	"client_secret" text NOT NULL,
	"scopes" text[] NOT NULL,
	"native_client_ids" text[] DEFAULT '{}'::text[] NOT NULL,
	"provisioning" text NOT NULL,
	"claim_mapping" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tessera_upstream_oidc_provider_name_key" UNIQUE("tenant_uuid","name"),
	CONSTRAINT "tessera_upstream_oidc_provider_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_upstream_oidc_provider_tenant_idx" ON "tessera_upstream_oidc_provider" USING btree ("tenant_uuid");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "tessera_upstream_oidc_link" (
	"provider_uuid" varchar(38) NOT NULL,
	"subject" text NOT NULL,
	"user_uuid" varchar(38) NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tessera_upstream_oidc_link_provider_uuid_subject_pk" PRIMARY KEY("provider_uuid","subject"),
	CONSTRAINT "tessera_upstream_oidc_link_provider_uuid_fk" FOREIGN KEY ("provider_uuid") REFERENCES "public"."tessera_upstream_oidc_provider"("uuid") ON DELETE cascade ON UPDATE no action,
	CONSTRAINT "tessera_upstream_oidc_link_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_upstream_oidc_link_user_idx" ON "tessera_upstream_oidc_link" USING btree ("user_uuid");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "tessera_upstream_oidc_login" (
	"state_hash" text PRIMARY KEY NOT NULL,
	"provider_uuid" varchar(38) NOT NULL,
	"browser_hash" text NOT NULL,
	"nonce" text NOT NULL,
	"code_verifier" text NOT NULL,
	"params" jsonb NOT NULL,
	"user_uuid" varchar(38),
	"subject" text,
	"completion_hash" text,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "tessera_upstream_oidc_login_completion_key" UNIQUE("completion_hash"),
	CONSTRAINT "tessera_upstream_oidc_login_provider_uuid_fk" FOREIGN KEY ("provider_uuid") REFERENCES "public"."tessera_upstream_oidc_provider"("uuid") ON DELETE cascade ON UPDATE no action,
	CONSTRAINT "tessera_upstream_oidc_login_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_upstream_oidc_login_expires_idx" ON "tessera_upstream_oidc_login" USING btree ("expires_at");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "tessera_upstream_oidc_token_use" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_upstream_oidc_token_use_expires_idx" ON "tessera_upstream_oidc_token_use" USING btree ("expires_at");
