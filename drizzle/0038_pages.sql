-- Issue 43: the user's own language (a BCP 47 tag) for the hosted pages and the mails; null = none chosen.
ALTER TABLE "auth_user" ADD COLUMN IF NOT EXISTS "locale" text;
--> statement-breakpoint
-- Issue 43: a tenant's branding of the hosted pages (colours checked for WCAG AA contrast on save).
CREATE TABLE IF NOT EXISTS "tessera_tenant_branding" (
	"tenant_uuid" varchar(38) PRIMARY KEY NOT NULL REFERENCES "auth_tenant"("uuid") ON DELETE CASCADE,
	"product_name" text,
	"logo" text,
	"primary_color" varchar(7),
	"background_color" varchar(7),
	"text_color" varchar(7),
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
