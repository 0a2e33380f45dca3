CREATE SCHEMA "tessera";
--> statement-breakpoint
CREATE TABLE "tessera"."tenant_user_count" (
	"tenant_uuid" varchar(38) PRIMARY KEY NOT NULL,
	"users" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX "auth_email_address_trgm_idx" ON "auth_email" USING gin ("address" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "auth_user_tenant_username_idx" ON "auth_user" USING btree ("tenant_uuid","username","uuid");--> statement-breakpoint
CREATE INDEX "auth_user_username_trgm_idx" ON "auth_user" USING gin ("username" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "auth_user_firstname_trgm_idx" ON "auth_user" USING gin ("firstname" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "auth_user_lastname_trgm_idx" ON "auth_user" USING gin ("lastname" gin_trgm_ops);