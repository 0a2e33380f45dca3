-- RFC 8707 §2.1: the resource an authorization request indicated, remembered with its code; the
-- token request's `resource` must name it (or be absent, meaning it).
ALTER TABLE "tessera_oidc_code" ADD COLUMN IF NOT EXISTS "resource" text;
