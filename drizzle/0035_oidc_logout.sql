-- OpenID Connect Back-Channel Logout 1.0 §2.2 and Front-Channel Logout 1.0 §2: a client's logout
-- URIs, and whether it needs the `sid` (and `iss`) to know which of its sessions ended. Absent: the
-- client is not told of logouts (RP-initiated logout and the redirect are all it gets, as before).
ALTER TABLE "tessera_oidc_client" ADD COLUMN IF NOT EXISTS "backchannel_logout_uri" text;--> statement-breakpoint
ALTER TABLE "tessera_oidc_client" ADD COLUMN IF NOT EXISTS "backchannel_logout_session_required" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "tessera_oidc_client" ADD COLUMN IF NOT EXISTS "frontchannel_logout_uri" text;--> statement-breakpoint
ALTER TABLE "tessera_oidc_client" ADD COLUMN IF NOT EXISTS "frontchannel_logout_session_required" boolean DEFAULT false NOT NULL;
--> statement-breakpoint
-- The clients a browser session gave tokens to (recorded at the code exchange): when the browser
-- session ends they are told (back-channel, front-channel), even after the access tokens issued
-- through it have expired. It goes with the browser session or the client.
CREATE TABLE IF NOT EXISTS "tessera_oidc_browser_session_client" (
	"browser_session_id" varchar(38) NOT NULL,
	"client_id" varchar(38) NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tessera_oidc_browser_session_client_pk" PRIMARY KEY("browser_session_id","client_id"),
	CONSTRAINT "tessera_oidc_browser_session_client_session_fk" FOREIGN KEY ("browser_session_id") REFERENCES "public"."tessera_oidc_browser_session"("uuid") ON DELETE cascade ON UPDATE no action,
	CONSTRAINT "tessera_oidc_browser_session_client_client_fk" FOREIGN KEY ("client_id") REFERENCES "public"."tessera_oidc_client"("client_id") ON DELETE cascade ON UPDATE no action
);--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tessera_oidc_browser_session_client_client_idx" ON "tessera_oidc_browser_session_client" USING btree ("client_id");
