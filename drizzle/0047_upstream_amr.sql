-- Trusting an upstream OpenID provider's `amr` (issue 40 item 2, docs/federation.md "Multi-factor"): a
-- provider may be configured to vouch for the second factor, and each sign-in under way keeps the `amr`
-- of the ID token it verified, so that the login (plugins/idp/oidc.ts) reads it from the server's own
-- record and never from anything the browser sends.
ALTER TABLE "tessera_upstream_oidc_provider" ADD COLUMN IF NOT EXISTS "trust_amr" boolean DEFAULT false NOT NULL;
--> statement-breakpoint
ALTER TABLE "tessera_upstream_oidc_login" ADD COLUMN IF NOT EXISTS "amr" text[];
