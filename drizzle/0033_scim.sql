-- SCIM 2.0 (RFC 7643/7644, docs/scim.md): the bearer tokens an administrator creates for a tenant's
-- directory (stored as SHA-256 of the secret, shown once), and what a directory sends about users and
-- groups that the wazo-auth schema has no column for: `externalId` and every other attribute (the
-- Enterprise User extension, unmapped ones), kept so nothing the directory sends is lost.
CREATE TABLE IF NOT EXISTS "tessera_scim_token" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"name" text NOT NULL,
	"token_hash" text NOT NULL,
	"acl" text[] NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_by" varchar(38),
	"last_used_at" timestamp with time zone,
	CONSTRAINT "tessera_scim_token_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action
);--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS "tessera_scim_token_hash_idx" ON "tessera_scim_token" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_scim_token_tenant_idx" ON "tessera_scim_token" USING btree ("tenant_uuid");--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "tessera_scim_user" (
	"user_uuid" varchar(38) PRIMARY KEY NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"external_id" text,
	"attributes" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tessera_scim_user_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action
);--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_scim_user_external_idx" ON "tessera_scim_user" USING btree ("tenant_uuid","external_id");--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "tessera_scim_group" (
	"group_uuid" varchar(38) PRIMARY KEY NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"external_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tessera_scim_group_group_uuid_auth_group_uuid_fk" FOREIGN KEY ("group_uuid") REFERENCES "public"."auth_group"("uuid") ON DELETE cascade ON UPDATE no action
);--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_scim_group_external_idx" ON "tessera_scim_group" USING btree ("tenant_uuid","external_id");--> statement-breakpoint
-- A tenant's SCIM users (purpose `user`) in uuid order: a deep startIndex walks this index alone.
CREATE INDEX IF NOT EXISTS "auth_user_tenant_purpose_uuid_idx" ON "auth_user" USING btree ("tenant_uuid","purpose","uuid");
