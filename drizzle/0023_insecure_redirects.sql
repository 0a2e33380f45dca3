-- A client's `allow_insecure_redirects` (RFC 6749 §3.1.2.1): registration now refuses plain http
-- redirect URIs except on 127.0.0.1 or [::1] (RFC 8252 §7.3) unless the client sets it. Clients
-- already registered with such a URI (redirect or post-logout) get it set, so they keep working
-- and can still be updated as they are; an administrator clears it once they moved to https.
ALTER TABLE "tessera_oidc_client" ADD COLUMN "allow_insecure_redirects" boolean DEFAULT false NOT NULL;--> statement-breakpoint
UPDATE "tessera_oidc_client" SET "allow_insecure_redirects" = true
WHERE EXISTS (
  SELECT 1 FROM jsonb_array_elements_text("redirect_uris" || "post_logout_redirect_uris") AS u(uri)
  WHERE lower(left(u.uri, 5)) = 'http:' AND u.uri !~ '^http://(127\.0\.0\.1|\[::1\])(:[0-9]{1,5})?([/?].*)?$'
);
