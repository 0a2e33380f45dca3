-- Sender-constrained tokens (DPoP, RFC 9449): the key an access or refresh token is bound to
-- (its RFC 7638 thumbprint, `cnf.jkt`), the clients whose tokens must be bound, and the proofs
-- already seen (RFC 9449 §11.1: a `jti` is accepted once), shared by every instance.
ALTER TABLE "tessera_oidc_client" ADD COLUMN IF NOT EXISTS "dpop_bound_access_tokens" boolean NOT NULL DEFAULT false;
--> statement-breakpoint
ALTER TABLE "tessera_oidc_access_token" ADD COLUMN IF NOT EXISTS "jkt" varchar(43);
--> statement-breakpoint
-- On the token itself too, so the token check's hot path tells a bound token by one field of the
-- cached token (a Tessera addition to auth_token, as expire_soon_notified).
ALTER TABLE "auth_token" ADD COLUMN IF NOT EXISTS "dpop_jkt" varchar(43);
--> statement-breakpoint
ALTER TABLE "tessera_oidc_refresh_token" ADD COLUMN IF NOT EXISTS "jkt" varchar(43);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "tessera_oidc_dpop_proof" (
	"proof_hash" varchar(64) PRIMARY KEY NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_oidc_dpop_proof_expires_at_idx" ON "tessera_oidc_dpop_proof" ("expires_at");
