-- The per-tenant password policy (NIST SP 800-63B §3.1.1.2): a tenant's own minimum password length,
-- inherited by its sub-tenants (the effective minimum is the largest along the tenant's path and the
-- service-wide `password_policy.min_length`), and the tenant of the administrator who set it: only
-- administrators of that tenant or above may lower it.
-- One statement, IF NOT EXISTS: it was first numbered 0029, before 0030 (merged first), so a
-- database that ran it under that number skips it here instead of failing.
CREATE TABLE IF NOT EXISTS "tessera_tenant_password_policy" (
	"tenant_uuid" varchar(38) PRIMARY KEY NOT NULL,
	"min_length" integer NOT NULL,
	"set_by_tenant_uuid" varchar(38),
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tessera_tenant_password_policy_min_length_check" CHECK ("tessera_tenant_password_policy"."min_length" between 1 and 1024),
	CONSTRAINT "tessera_tenant_password_policy_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE cascade ON UPDATE no action,
	CONSTRAINT "tessera_tenant_password_policy_set_by_tenant_uuid_auth_tenant_uuid_fk" FOREIGN KEY ("set_by_tenant_uuid") REFERENCES "public"."auth_tenant"("uuid") ON DELETE set null ON UPDATE no action
);
