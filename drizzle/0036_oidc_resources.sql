-- Resource servers registered per tenant (RFC 8707 resource indicators; RFC 9068 JWT access
-- tokens): the identifier a client names with `resource=`, the ACL entries the resource may receive,
-- and the format and lifetime of the access tokens issued for it. An access token issued for a
-- resource remembers it, with the `jti` of its JWT (a JWT is found by it at the token check) and
-- the acting party of a token exchange (RFC 8693 §4.1 `act`).
CREATE TABLE IF NOT EXISTS "tessera_oidc_resource" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"identifier" text NOT NULL,
	"acl" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"token_format" varchar(16) NOT NULL,
	"access_token_lifetime" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tessera_oidc_resource_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action,
	CONSTRAINT "tessera_oidc_resource_tenant_identifier" UNIQUE ("tenant_uuid", "identifier")
);
--> statement-breakpoint
ALTER TABLE "tessera_oidc_access_token" ADD COLUMN IF NOT EXISTS "jti" varchar(38);
--> statement-breakpoint
ALTER TABLE "tessera_oidc_access_token" ADD COLUMN IF NOT EXISTS "resource" text;
--> statement-breakpoint
ALTER TABLE "tessera_oidc_access_token" ADD COLUMN IF NOT EXISTS "act" jsonb;
--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS "tessera_oidc_access_token_jti_idx" ON "tessera_oidc_access_token" USING btree ("jti");
