CREATE TABLE "tessera_passkey" (
	"credential_id" text PRIMARY KEY NOT NULL,
	"uuid" varchar(38) NOT NULL,
	"user_uuid" varchar(38) NOT NULL,
	"name" text NOT NULL,
	"public_key" text NOT NULL,
	"counter" bigint DEFAULT 0 NOT NULL,
	"transports" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"backup_eligible" boolean NOT NULL,
	"backed_up" boolean NOT NULL,
	"aaguid" varchar(36),
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone,
	CONSTRAINT "tessera_passkey_uuid_unique" UNIQUE("uuid")
);
--> statement-breakpoint
CREATE TABLE "tessera_mfa_pending_sign_in" (
	"handle_hash" varchar(64) PRIMARY KEY NOT NULL,
	"browser_hash" varchar(64) NOT NULL,
	"user_uuid" varchar(38) NOT NULL,
	"login" text NOT NULL,
	"method" text NOT NULL,
	"backend_name" text NOT NULL,
	"stage" text NOT NULL,
	"client_id" varchar(38),
	"amr" jsonb NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tessera_webauthn_challenge" (
	"handle_hash" varchar(64) PRIMARY KEY NOT NULL,
	"challenge" text NOT NULL,
	"purpose" text NOT NULL,
	"user_uuid" varchar(38),
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "tessera_tenant_mfa_policy" ALTER COLUMN "mfa" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "tessera_tenant_mfa_policy" ADD COLUMN "passwordless" boolean;--> statement-breakpoint
ALTER TABLE "tessera_passkey" ADD CONSTRAINT "tessera_passkey_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_mfa_pending_sign_in" ADD CONSTRAINT "tessera_mfa_pending_sign_in_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_webauthn_challenge" ADD CONSTRAINT "tessera_webauthn_challenge_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tessera_passkey_user_idx" ON "tessera_passkey" USING btree ("user_uuid");