CREATE TABLE "tessera_login_throttle" (
	"kind" text NOT NULL,
	"key" text NOT NULL,
	"failures" integer NOT NULL,
	"last_failure_at" timestamp with time zone NOT NULL,
	"locked_until" timestamp with time zone,
	"locked_at_failures" integer,
	CONSTRAINT "tessera_login_throttle_kind_key_pk" PRIMARY KEY("kind","key")
);
--> statement-breakpoint
CREATE INDEX "tessera_login_throttle_last_failure_idx" ON "tessera_login_throttle" USING btree ("last_failure_at");