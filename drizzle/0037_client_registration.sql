-- Clients that register themselves (RFC 7591, RFC 7592), pushed authorization requests (RFC 9126)
-- and request objects (RFC 9101).
-- An initial access token (RFC 7591 §3): issued by a tenant administrator, stored as its SHA-256,
-- it decides the tenant of the clients registered with it and which grant types they may use.
CREATE TABLE IF NOT EXISTS "tessera_oidc_initial_access_token" (
	"uuid" varchar(38) PRIMARY KEY NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL REFERENCES "auth_tenant"("uuid") ON DELETE CASCADE,
	"token_hash" varchar(64) NOT NULL UNIQUE,
	"max_uses" integer NOT NULL,
	"uses" integer NOT NULL DEFAULT 0,
	"grant_types" jsonb NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_oidc_initial_access_token_tenant_idx" ON "tessera_oidc_initial_access_token" ("tenant_uuid");
--> statement-breakpoint
-- A self-registered client's registration access token (RFC 7592 §3, SHA-256), the initial access
-- token it was registered with, the metadata it registered that Tessera only keeps and shows
-- (client_uri, logo_uri, contacts...), its keys for request objects, and whether it must push its
-- authorization requests.
ALTER TABLE "tessera_oidc_client" ADD COLUMN IF NOT EXISTS "registration_token_hash" varchar(64);
--> statement-breakpoint
ALTER TABLE "tessera_oidc_client" ADD COLUMN IF NOT EXISTS "registered_with" varchar(38);
--> statement-breakpoint
ALTER TABLE "tessera_oidc_client" ADD COLUMN IF NOT EXISTS "registration_metadata" jsonb;
--> statement-breakpoint
ALTER TABLE "tessera_oidc_client" ADD COLUMN IF NOT EXISTS "jwks" jsonb;
--> statement-breakpoint
ALTER TABLE "tessera_oidc_client" ADD COLUMN IF NOT EXISTS "jwks_uri" text;
--> statement-breakpoint
ALTER TABLE "tessera_oidc_client" ADD COLUMN IF NOT EXISTS "require_pushed_authorization_requests" boolean NOT NULL DEFAULT false;
--> statement-breakpoint
-- A pushed authorization request (RFC 9126 §2): its request_uri's SHA-256, the client it is bound
-- to, the parameters, and until when it may be used; it is deleted when the code is issued.
CREATE TABLE IF NOT EXISTS "tessera_oidc_pushed_request" (
	"uri_hash" varchar(64) PRIMARY KEY NOT NULL,
	"client_id" varchar(38) NOT NULL REFERENCES "tessera_oidc_client"("client_id") ON DELETE CASCADE,
	"params" jsonb NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"opened" boolean NOT NULL DEFAULT false
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_oidc_pushed_request_expires_idx" ON "tessera_oidc_pushed_request" ("expires_at");
