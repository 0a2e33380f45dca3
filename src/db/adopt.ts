// Schema preparation before drizzle's migrator, in one transaction under an advisory lock (several
// instances may start at once on one PostgreSQL):
// 1. a database written by wazo-auth (its `alembic_version_auth` revision, no drizzle journal) is
//    adopted in place: Tessera's additions to wazo-auth's schema are applied additively (new tables,
//    nullable or defaulted columns, indexes, nothing dropped, renamed or rewritten), checked against
//    Tessera's baseline, and the journal is started at the migrations the adoption covers;
// 2. the pending migrations of drizzle/ are applied exactly as drizzle's migrator does (same
//    journal rows), so the migrator called afterwards finds nothing left to do.
// A wazo-auth revision Tessera does not know is refused before anything changes.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { readMigrationFiles } from "drizzle-orm/migrator";
import type { Db, Tx } from "./types.ts";

/** wazo-auth schema revisions whose tables Tessera's baseline matches, and what adoption covers. */
export const KNOWN_WAZO_REVISIONS: Record<string, { coversMigrations: string[] }> = {
  "1c862ebfbb3a": { coversMigrations: ["0000_baseline", "0001_seed"] },
};

const LOCK_KEY = 7_302_515_977; // pg_advisory_xact_lock key of Tessera's schema changes
const JOURNAL = `"drizzle"."__drizzle_migrations"`;
const CHECK_SCHEMA = "tessera_adopt_check";

export class SchemaAdoptionError extends Error {}

/** The wazo-auth revision adopted when this database handle was opened (for the start-up log). */
const adoptions = new WeakMap<object, string>();
export function adoptedWazoRevision(db: Db): string | null {
  return adoptions.get(db) ?? null;
}
/** Log fields saying a wazo-auth database was just adopted (none otherwise). */
export function adoptionNote(db: Db): Record<string, string> {
  const revision = adoptedWazoRevision(db);
  return revision ? { adopted_wazo_auth_revision: revision } : {};
}

/** Tessera's additions to wazo-auth's schema (drizzle/0000_baseline.sql minus what wazo-auth has). */
const ADDITIONS = [
  `ALTER TABLE "auth_user" ADD COLUMN IF NOT EXISTS "password_iterations" integer`,
  `ALTER TABLE "auth_token" ADD COLUMN IF NOT EXISTS "expire_soon_notified" boolean DEFAULT false NOT NULL`,
  `CREATE TABLE IF NOT EXISTS "tessera_event_outbox" (
    "id" bigserial PRIMARY KEY NOT NULL, "name" text NOT NULL, "routing_key" text NOT NULL,
    "headers" jsonb NOT NULL, "payload" jsonb NOT NULL, "aggregate" text NOT NULL,
    "created_at" timestamp with time zone DEFAULT now() NOT NULL, "claimed_by" text,
    "claimed_until" timestamp with time zone, "published_at" timestamp with time zone,
    "attempts" integer DEFAULT 0 NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "tessera_event_outbox_pending_idx" ON "tessera_event_outbox" USING btree ("id") WHERE "published_at" is null`,
  `CREATE TABLE IF NOT EXISTS "tessera_oauth2_state" (
    "state" text PRIMARY KEY NOT NULL, "auth_type" text NOT NULL,
    "user_uuid" varchar(38) NOT NULL REFERENCES "auth_user"("uuid") ON DELETE cascade,
    "tenant_uuid" varchar(38) NOT NULL, "extra" jsonb DEFAULT '[]'::jsonb NOT NULL,
    "created_at" timestamp with time zone DEFAULT now() NOT NULL)`,
  // Indexes of Tessera's hot paths that wazo-auth lacks (plain, non-unique: no new constraint).
  `CREATE INDEX IF NOT EXISTS "auth_token_expire_t_idx" ON "auth_token" USING btree ("expire_t")`,
  `CREATE INDEX IF NOT EXISTS "auth_token_auth_id_idx" ON "auth_token" USING btree ("auth_id")`,
  `CREATE INDEX IF NOT EXISTS "auth_token_refresh_token_idx" ON "auth_token" USING btree ("refresh_token_uuid")`,
  `CREATE INDEX IF NOT EXISTS "auth_group_policy_policy_idx" ON "auth_group_policy" USING btree ("policy_uuid")`,
  `CREATE INDEX IF NOT EXISTS "auth_user_external_auth_type_idx" ON "auth_user_external_auth" USING btree ("external_auth_type_uuid")`,
  `CREATE INDEX IF NOT EXISTS "auth_user_group_user_idx" ON "auth_user_group" USING btree ("user_uuid")`,
  `CREATE INDEX IF NOT EXISTS "auth_user_policy_policy_idx" ON "auth_user_policy" USING btree ("policy_uuid")`,
  `CREATE INDEX IF NOT EXISTS "auth_user_firstname_idx" ON "auth_user" USING btree ("firstname")`,
  `CREATE INDEX IF NOT EXISTS "auth_user_lastname_idx" ON "auth_user" USING btree ("lastname")`,
];

async function rows<T>(tx: Tx | Db, query: ReturnType<typeof sql>): Promise<T[]> {
  const result = (await tx.execute(query)) as unknown;
  return (Array.isArray(result) ? result : ((result as { rows?: T[] }).rows ?? [])) as T[]; // postgres.js | PGlite
}

/** Adopts a wazo-auth database if there is one, then applies the pending migrations. Idempotent. */
export async function prepareSchema(db: Db, migrationsFolder: string): Promise<{ adopted: string | null }> {
  const migrations = readMigrationFiles({ migrationsFolder });
  const journal = JSON.parse(readFileSync(join(migrationsFolder, "meta", "_journal.json"), "utf8")) as {
    entries: Array<{ tag: string; when: number }>;
  };
  const result = await (db as unknown as { transaction<T>(f: (tx: Tx) => Promise<T>): Promise<T> }).transaction(
    async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${LOCK_KEY})`);
      const revision = await wazoRevision(tx);
      await tx.execute(sql.raw(`CREATE SCHEMA IF NOT EXISTS "drizzle"`));
      await tx.execute(
        sql.raw(`CREATE TABLE IF NOT EXISTS ${JOURNAL} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`),
      );
      let applied = await rows<{ created_at: string | number }>(
        tx,
        sql.raw(`select created_at from ${JOURNAL} order by created_at desc limit 1`),
      );
      let adopted: string | null = null;
      if (revision && !applied.length) {
        await adopt(tx, migrationsFolder, revision);
        const covered = new Set(KNOWN_WAZO_REVISIONS[revision]!.coversMigrations);
        for (const [i, entry] of journal.entries.entries()) {
          // readMigrationFiles keeps the journal's order
          if (!covered.has(entry.tag)) continue;
          await tx.execute(
            sql`insert into "drizzle"."__drizzle_migrations" ("hash", "created_at") values (${migrations[i]!.hash}, ${entry.when})`,
          );
        }
        applied = await rows(tx, sql.raw(`select created_at from ${JOURNAL} order by created_at desc limit 1`));
        adopted = revision;
      }
      const last = applied[0] ? Number(applied[0].created_at) : null;
      for (const migration of migrations) {
        if (last !== null && migration.folderMillis <= last) continue;
        for (const statement of migration.sql) await tx.execute(sql.raw(statement));
        await tx.execute(
          sql`insert into "drizzle"."__drizzle_migrations" ("hash", "created_at") values (${migration.hash}, ${migration.folderMillis})`,
        );
      }
      return { adopted };
    },
  );
  if (result.adopted) adoptions.set(db, result.adopted);
  return result;
}

/** The wazo-auth revision of this database, null when it is not wazo-auth's; unknown → refused. */
async function wazoRevision(tx: Tx): Promise<string | null> {
  const [present] = await rows<{ t: string | null }>(
    tx,
    sql`select to_regclass('public.alembic_version_auth')::text as t`,
  );
  if (!present?.t) return null;
  const versions = (
    await rows<{ version_num: string }>(tx, sql.raw(`select version_num from "alembic_version_auth"`))
  ).map((r) => r.version_num);
  const unknown = versions.filter((v) => !KNOWN_WAZO_REVISIONS[v]);
  if (versions.length !== 1 || unknown.length) {
    const named = versions.length ? versions.join(", ") : "(none)";
    throw new SchemaAdoptionError(
      `this database was written by wazo-auth at schema revision ${named}, which Tessera cannot adopt; known revision(s): ${Object.keys(KNOWN_WAZO_REVISIONS).join(", ")}. Nothing was changed.`,
    );
  }
  return versions[0]!;
}

async function adopt(tx: Tx, migrationsFolder: string, revision: string): Promise<void> {
  for (const statement of ADDITIONS) await tx.execute(sql.raw(statement));
  const missing = await baselineDiff(tx, migrationsFolder);
  if (missing.length) {
    throw new SchemaAdoptionError(
      `the wazo-auth database (revision ${revision}) lacks ${missing.join(", ")} that Tessera needs. Nothing was changed.`,
    );
  }
}

/**
 * Tables and columns of Tessera's baseline that the database lacks or types differently: the
 * baseline is created in a scratch schema (dropped with the transaction's end) and the two are
 * compared through information_schema. Lengths and defaults may differ (wazo-auth's own).
 */
async function baselineDiff(tx: Tx, migrationsFolder: string): Promise<string[]> {
  const baseline = readFileSync(join(migrationsFolder, "0000_baseline.sql"), "utf8").replaceAll(
    `"public".`,
    `"${CHECK_SCHEMA}".`,
  );
  await tx.execute(sql.raw(`CREATE SCHEMA "${CHECK_SCHEMA}"`));
  await tx.execute(sql.raw(`SET LOCAL search_path TO "${CHECK_SCHEMA}"`));
  for (const statement of baseline.split("--> statement-breakpoint")) await tx.execute(sql.raw(statement));
  await tx.execute(sql.raw(`SET LOCAL search_path TO public`));
  const diff = await rows<{ table_name: string; column_name: string; wanted: string; actual: string | null }>(
    tx,
    sql`select b.table_name, b.column_name, b.data_type as wanted, p.data_type as actual
        from information_schema.columns b
        left join information_schema.columns p
          on p.table_schema = 'public' and p.table_name = b.table_name and p.column_name = b.column_name
        where b.table_schema = ${CHECK_SCHEMA} and (p.data_type is null or (p.data_type <> b.data_type and not ${compatibleTypes}))
        order by 1, 2`,
  );
  await tx.execute(sql.raw(`DROP SCHEMA "${CHECK_SCHEMA}" CASCADE`));
  return diff.map((d) =>
    d.actual
      ? `${d.table_name}.${d.column_name} as ${d.wanted} (it is ${d.actual})`
      : `${d.table_name}.${d.column_name}`,
  );
}

/** Strings are strings to Tessera: wazo-auth's varchar where the baseline says text, its xml SAML metadata. */
const compatibleTypes = sql`(b.data_type in ('text', 'character varying') and p.data_type in ('text', 'character varying', 'xml'))`;
