CREATE TABLE "tessera_mfa_recovery_code" (
	"id" serial PRIMARY KEY NOT NULL,
	"user_uuid" varchar(38) NOT NULL,
	"code_hash" text NOT NULL,
	"used_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "tessera_mfa_totp" (
	"user_uuid" varchar(38) PRIMARY KEY NOT NULL,
	"secret_encrypted" text NOT NULL,
	"confirmed_at" timestamp with time zone,
	"last_used_step" bigint,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tessera_tenant_mfa_policy" (
	"tenant_uuid" varchar(38) PRIMARY KEY NOT NULL,
	"mfa" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tessera_tenant_mfa_policy_mfa_check" CHECK ("tessera_tenant_mfa_policy"."mfa" in ('optional', 'required'))
);
--> statement-breakpoint
ALTER TABLE "tessera_mfa_recovery_code" ADD CONSTRAINT "tessera_mfa_recovery_code_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_mfa_totp" ADD CONSTRAINT "tessera_mfa_totp_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_tenant_mfa_policy" ADD CONSTRAINT "tessera_tenant_mfa_policy_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tessera_mfa_recovery_code_user_idx" ON "tessera_mfa_recovery_code" USING btree ("user_uuid");