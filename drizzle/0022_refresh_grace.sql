-- A rotated OIDC refresh token remembers its successor (RFC 9700 §4.14.2 grace period): the salt the
-- successor was derived with from the presented token (HMAC-SHA-256, so only a holder of the
-- predecessor can derive it again: the database keeps hashes only), and the access token issued with
-- it, ended when a retry within the grace period gets a new one.
ALTER TABLE "tessera_oidc_refresh_token" ADD COLUMN "successor_salt" varchar(43);--> statement-breakpoint
ALTER TABLE "tessera_oidc_refresh_token" ADD COLUMN "successor_token_uuid" varchar(38);
