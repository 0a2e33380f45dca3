CREATE TABLE "tessera_saml_login" (
	"session_uuid" varchar(38) PRIMARY KEY NOT NULL,
	"domain" text NOT NULL,
	"login" text NOT NULL,
	"name_id" text NOT NULL,
	"name_id_format" text,
	"session_index" text,
	"redirect_url" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tessera_saml_sp_key" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"private_key" text NOT NULL,
	"certificate" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tessera_saml_sp_key_single_row" CHECK ("tessera_saml_sp_key"."id" = 1)
);
--> statement-breakpoint
ALTER TABLE "tessera_saml_login" ADD CONSTRAINT "tessera_saml_login_session_uuid_auth_session_uuid_fk" FOREIGN KEY ("session_uuid") REFERENCES "public"."auth_session"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tessera_saml_login_created_idx" ON "tessera_saml_login" USING btree ("created_at");