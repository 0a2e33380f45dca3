CREATE TABLE "auth_access" (
	"id" serial PRIMARY KEY NOT NULL,
	"access" text NOT NULL,
	CONSTRAINT "auth_access_access_key" UNIQUE("access")
);
--> statement-breakpoint
CREATE TABLE "auth_address" (
	"id" serial PRIMARY KEY NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"line_1" text,
	"line_2" text,
	"city" text,
	"state" text,
	"zip_code" text,
	"country" text
);
--> statement-breakpoint
CREATE TABLE "auth_email" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"address" text NOT NULL,
	"confirmed" boolean DEFAULT false NOT NULL,
	"main" boolean DEFAULT false NOT NULL,
	"user_uuid" varchar(38) NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tessera_event_outbox" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"routing_key" text NOT NULL,
	"headers" jsonb NOT NULL,
	"payload" jsonb NOT NULL,
	"aggregate" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"claimed_by" text,
	"claimed_until" timestamp with time zone,
	"published_at" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "auth_external_auth_config" (
	"tenant_uuid" varchar(38) NOT NULL,
	"type_uuid" varchar(38) NOT NULL,
	"data" text,
	CONSTRAINT "auth_external_auth_config_tenant_uuid_type_uuid_pk" PRIMARY KEY("tenant_uuid","type_uuid")
);
--> statement-breakpoint
CREATE TABLE "auth_external_auth_type" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"name" text NOT NULL,
	"enabled" boolean DEFAULT false NOT NULL,
	CONSTRAINT "auth_external_auth_type_name_key" UNIQUE("name")
);
--> statement-breakpoint
CREATE TABLE "auth_group_policy" (
	"group_uuid" varchar(38) NOT NULL,
	"policy_uuid" varchar(38) NOT NULL,
	CONSTRAINT "auth_group_policy_group_uuid_policy_uuid_pk" PRIMARY KEY("group_uuid","policy_uuid")
);
--> statement-breakpoint
CREATE TABLE "auth_group" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"name" text NOT NULL,
	"slug" varchar(80) NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"system_managed" boolean DEFAULT false NOT NULL,
	CONSTRAINT "auth_group_name_tenant" UNIQUE("name","tenant_uuid")
);
--> statement-breakpoint
CREATE TABLE "auth_ldap_config" (
	"tenant_uuid" varchar(38) PRIMARY KEY NOT NULL,
	"host" varchar(512) NOT NULL,
	"port" integer NOT NULL,
	"protocol_version" smallint DEFAULT 3 NOT NULL,
	"protocol_security" text,
	"bind_dn" varchar(256),
	"bind_password" text,
	"user_base_dn" varchar(256) NOT NULL,
	"user_login_attribute" varchar(64) NOT NULL,
	"user_email_attribute" varchar(64) NOT NULL,
	"search_filters" text,
	CONSTRAINT "auth_ldap_config_protocol_security_check" CHECK ("auth_ldap_config"."protocol_security" in ('ldaps', 'tls'))
);
--> statement-breakpoint
CREATE TABLE "tessera_oauth2_state" (
	"state" text PRIMARY KEY NOT NULL,
	"auth_type" text NOT NULL,
	"user_uuid" varchar(38) NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"extra" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "auth_policy" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"name" varchar(80) NOT NULL,
	"slug" varchar(80) NOT NULL,
	"description" text,
	"tenant_uuid" varchar(38) NOT NULL,
	"config_managed" boolean DEFAULT false NOT NULL,
	"shared" boolean DEFAULT false NOT NULL,
	CONSTRAINT "auth_policy_name_tenant" UNIQUE("name","tenant_uuid")
);
--> statement-breakpoint
CREATE TABLE "auth_policy_access" (
	"policy_uuid" varchar(38) NOT NULL,
	"access_id" integer NOT NULL,
	CONSTRAINT "auth_policy_access_policy_uuid_access_id_pk" PRIMARY KEY("policy_uuid","access_id")
);
--> statement-breakpoint
CREATE TABLE "auth_refresh_token" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"client_id" text NOT NULL,
	"user_uuid" varchar(38) NOT NULL,
	"backend" text,
	"login" text,
	"user_agent" text,
	"remote_addr" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"mobile" boolean DEFAULT false NOT NULL,
	"metadata" json DEFAULT '{}'::json NOT NULL,
	CONSTRAINT "auth_refresh_token_client_id_user_uuid" UNIQUE("client_id","user_uuid")
);
--> statement-breakpoint
CREATE TABLE "auth_saml_config" (
	"tenant_uuid" varchar(38) NOT NULL,
	"domain_uuid" varchar(38) NOT NULL,
	"entity_id" varchar(512) NOT NULL,
	"idp_metadata" text NOT NULL,
	"acs_url" varchar(512) NOT NULL,
	CONSTRAINT "auth_saml_config_tenant_uuid_domain_uuid_pk" PRIMARY KEY("tenant_uuid","domain_uuid")
);
--> statement-breakpoint
CREATE TABLE "auth_saml_pysaml2_cache" (
	"name_id" varchar(512) NOT NULL,
	"entity_id" varchar(1024) NOT NULL,
	"info" text NOT NULL,
	"not_on_or_after" integer NOT NULL,
	CONSTRAINT "auth_saml_pysaml2_cache_name_id_entity_id_pk" PRIMARY KEY("name_id","entity_id")
);
--> statement-breakpoint
CREATE TABLE "auth_saml_session" (
	"request_id" varchar(40) NOT NULL,
	"session_id" varchar(22) NOT NULL,
	"redirect_url" text NOT NULL,
	"domain" text NOT NULL,
	"relay_state" text NOT NULL,
	"login" text,
	"start_time" timestamp with time zone DEFAULT now(),
	"saml_name_id" text,
	"refresh_token_uuid" varchar(38),
	CONSTRAINT "auth_saml_session_request_id_session_id_pk" PRIMARY KEY("request_id","session_id")
);
--> statement-breakpoint
CREATE TABLE "auth_session" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"mobile" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE "auth_tenant_domain" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"name" varchar(253) NOT NULL,
	CONSTRAINT "auth_tenant_domain_name_key" UNIQUE("name")
);
--> statement-breakpoint
CREATE TABLE "auth_tenant" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"name" text,
	"slug" varchar(10) NOT NULL,
	"phone" text,
	"contact_uuid" varchar(38),
	"parent_uuid" varchar(38) NOT NULL,
	"default_authentication_method" text DEFAULT 'native' NOT NULL,
	CONSTRAINT "auth_tenant_slug_key" UNIQUE("slug")
);
--> statement-breakpoint
CREATE TABLE "auth_token" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"auth_id" text NOT NULL,
	"pbx_user_uuid" varchar(38),
	"xivo_uuid" varchar(38),
	"issued_t" integer NOT NULL,
	"expire_t" integer NOT NULL,
	"metadata" text,
	"user_agent" text DEFAULT '' NOT NULL,
	"remote_addr" text DEFAULT '' NOT NULL,
	"acl" text[] DEFAULT '{}'::text[] NOT NULL,
	"session_uuid" varchar(38) NOT NULL,
	"refresh_token_uuid" varchar(38),
	"expire_soon_notified" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE "auth_user_external_auth" (
	"user_uuid" varchar(38) NOT NULL,
	"external_auth_type_uuid" varchar(38) NOT NULL,
	"data" text,
	CONSTRAINT "auth_user_external_auth_user_uuid_external_auth_type_uuid_pk" PRIMARY KEY("user_uuid","external_auth_type_uuid")
);
--> statement-breakpoint
CREATE TABLE "auth_user_group" (
	"group_uuid" varchar(38) NOT NULL,
	"user_uuid" varchar(38) NOT NULL,
	CONSTRAINT "auth_user_group_group_uuid_user_uuid_pk" PRIMARY KEY("group_uuid","user_uuid")
);
--> statement-breakpoint
CREATE TABLE "auth_user_policy" (
	"user_uuid" varchar(38) NOT NULL,
	"policy_uuid" varchar(38) NOT NULL,
	CONSTRAINT "auth_user_policy_user_uuid_policy_uuid_pk" PRIMARY KEY("user_uuid","policy_uuid")
);
--> statement-breakpoint
CREATE TABLE "auth_user" (
	"uuid" varchar(38) PRIMARY KEY DEFAULT gen_random_uuid()::text NOT NULL,
	"username" varchar(256),
	"password_hash" text,
	"password_salt" "bytea",
	"password_iterations" integer,
	"firstname" text,
	"lastname" text,
	"enabled" boolean DEFAULT true NOT NULL,
	"tenant_uuid" varchar(38) NOT NULL,
	"purpose" text DEFAULT 'user' NOT NULL,
	"authentication_method" text DEFAULT 'default' NOT NULL,
	CONSTRAINT "auth_user_purpose_check" CHECK ("auth_user"."purpose" in ('user', 'internal', 'external_api'))
);
--> statement-breakpoint
ALTER TABLE "auth_address" ADD CONSTRAINT "auth_address_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_email" ADD CONSTRAINT "auth_email_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_external_auth_config" ADD CONSTRAINT "auth_external_auth_config_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_external_auth_config" ADD CONSTRAINT "auth_external_auth_config_type_uuid_auth_external_auth_type_uuid_fk" FOREIGN KEY ("type_uuid") REFERENCES "public"."auth_external_auth_type"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_group_policy" ADD CONSTRAINT "auth_group_policy_group_uuid_auth_group_uuid_fk" FOREIGN KEY ("group_uuid") REFERENCES "public"."auth_group"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_group_policy" ADD CONSTRAINT "auth_group_policy_policy_uuid_auth_policy_uuid_fk" FOREIGN KEY ("policy_uuid") REFERENCES "public"."auth_policy"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_group" ADD CONSTRAINT "auth_group_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_ldap_config" ADD CONSTRAINT "auth_ldap_config_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tessera_oauth2_state" ADD CONSTRAINT "tessera_oauth2_state_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_policy" ADD CONSTRAINT "auth_policy_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_policy_access" ADD CONSTRAINT "auth_policy_access_policy_uuid_auth_policy_uuid_fk" FOREIGN KEY ("policy_uuid") REFERENCES "public"."auth_policy"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_policy_access" ADD CONSTRAINT "auth_policy_access_access_id_auth_access_id_fk" FOREIGN KEY ("access_id") REFERENCES "public"."auth_access"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_refresh_token" ADD CONSTRAINT "auth_refresh_token_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_saml_config" ADD CONSTRAINT "auth_saml_config_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_saml_config" ADD CONSTRAINT "auth_saml_config_domain_uuid_auth_tenant_domain_uuid_fk" FOREIGN KEY ("domain_uuid") REFERENCES "public"."auth_tenant_domain"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_saml_session" ADD CONSTRAINT "auth_saml_session_refresh_token_uuid_auth_refresh_token_uuid_fk" FOREIGN KEY ("refresh_token_uuid") REFERENCES "public"."auth_refresh_token"("uuid") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_session" ADD CONSTRAINT "auth_session_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_tenant_domain" ADD CONSTRAINT "auth_tenant_domain_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_tenant" ADD CONSTRAINT "auth_tenant_contact_uuid_auth_user_uuid_fk" FOREIGN KEY ("contact_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_tenant" ADD CONSTRAINT "auth_tenant_parent_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("parent_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_token" ADD CONSTRAINT "auth_token_session_uuid_auth_session_uuid_fk" FOREIGN KEY ("session_uuid") REFERENCES "public"."auth_session"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_token" ADD CONSTRAINT "auth_token_refresh_token_uuid_auth_refresh_token_uuid_fk" FOREIGN KEY ("refresh_token_uuid") REFERENCES "public"."auth_refresh_token"("uuid") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_user_external_auth" ADD CONSTRAINT "auth_user_external_auth_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_user_external_auth" ADD CONSTRAINT "auth_user_external_auth_external_auth_type_uuid_auth_external_auth_type_uuid_fk" FOREIGN KEY ("external_auth_type_uuid") REFERENCES "public"."auth_external_auth_type"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_user_group" ADD CONSTRAINT "auth_user_group_group_uuid_auth_group_uuid_fk" FOREIGN KEY ("group_uuid") REFERENCES "public"."auth_group"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_user_group" ADD CONSTRAINT "auth_user_group_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_user_policy" ADD CONSTRAINT "auth_user_policy_user_uuid_auth_user_uuid_fk" FOREIGN KEY ("user_uuid") REFERENCES "public"."auth_user"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_user_policy" ADD CONSTRAINT "auth_user_policy_policy_uuid_auth_policy_uuid_fk" FOREIGN KEY ("policy_uuid") REFERENCES "public"."auth_policy"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "auth_user" ADD CONSTRAINT "auth_user_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "auth_address_tenant_uuid_key" ON "auth_address" USING btree ("tenant_uuid");--> statement-breakpoint
CREATE UNIQUE INDEX "auth_email_address_lower_idx" ON "auth_email" USING btree (lower("address"));--> statement-breakpoint
CREATE INDEX "auth_email_user_uuid_idx" ON "auth_email" USING btree ("user_uuid");--> statement-breakpoint
CREATE INDEX "tessera_event_outbox_pending_idx" ON "tessera_event_outbox" USING btree ("id") WHERE "tessera_event_outbox"."published_at" is null;--> statement-breakpoint
CREATE INDEX "auth_group_policy_policy_idx" ON "auth_group_policy" USING btree ("policy_uuid");--> statement-breakpoint
CREATE UNIQUE INDEX "auth_group_slug_tenant_idx" ON "auth_group" USING btree (lower("slug"),"tenant_uuid");--> statement-breakpoint
CREATE INDEX "auth_group_tenant_uuid_idx" ON "auth_group" USING btree ("tenant_uuid");--> statement-breakpoint
CREATE UNIQUE INDEX "auth_policy_slug_tenant_idx" ON "auth_policy" USING btree (lower("slug"),"tenant_uuid");--> statement-breakpoint
CREATE INDEX "auth_policy_tenant_uuid_idx" ON "auth_policy" USING btree ("tenant_uuid");--> statement-breakpoint
CREATE INDEX "auth_refresh_token_user_idx" ON "auth_refresh_token" USING btree ("user_uuid");--> statement-breakpoint
CREATE INDEX "auth_session_tenant_uuid_idx" ON "auth_session" USING btree ("tenant_uuid");--> statement-breakpoint
CREATE INDEX "auth_tenant_domain_tenant_idx" ON "auth_tenant_domain" USING btree ("tenant_uuid");--> statement-breakpoint
CREATE INDEX "auth_tenant_parent_uuid_idx" ON "auth_tenant" USING btree ("parent_uuid");--> statement-breakpoint
CREATE INDEX "auth_token_expire_t_idx" ON "auth_token" USING btree ("expire_t");--> statement-breakpoint
CREATE INDEX "auth_token_session_uuid_idx" ON "auth_token" USING btree ("session_uuid");--> statement-breakpoint
CREATE INDEX "auth_token_auth_id_idx" ON "auth_token" USING btree ("auth_id");--> statement-breakpoint
CREATE INDEX "auth_token_refresh_token_idx" ON "auth_token" USING btree ("refresh_token_uuid");--> statement-breakpoint
CREATE INDEX "auth_user_external_auth_type_idx" ON "auth_user_external_auth" USING btree ("external_auth_type_uuid");--> statement-breakpoint
CREATE INDEX "auth_user_group_user_idx" ON "auth_user_group" USING btree ("user_uuid");--> statement-breakpoint
CREATE INDEX "auth_user_policy_policy_idx" ON "auth_user_policy" USING btree ("policy_uuid");--> statement-breakpoint
CREATE UNIQUE INDEX "auth_user_username_lower_idx" ON "auth_user" USING btree (lower("username"));--> statement-breakpoint
CREATE INDEX "auth_user_tenant_uuid_idx" ON "auth_user" USING btree ("tenant_uuid");--> statement-breakpoint
CREATE INDEX "auth_user_firstname_idx" ON "auth_user" USING btree ("firstname");--> statement-breakpoint
CREATE INDEX "auth_user_lastname_idx" ON "auth_user" USING btree ("lastname");