// Builds the app on a fresh database for a test suite. Every suite runs on PGlite; with
// TEST_DATABASE_URL set, `describeEachDb` runs it again on a fresh PostgreSQL database.
import { afterAll, beforeAll, describe } from "bun:test";
import { sql } from "drizzle-orm";
import { PGlite } from "@electric-sql/pglite";
import type { Hono } from "hono";
import { parseConfig, type Config } from "../../src/config/config.ts";
import type { AppContext } from "../../src/boot/context.ts";
import { openDatabase, pgliteOptions, type Database } from "../../src/db/index.ts";
import { seedDataDir, templateDir } from "../../src/db/pglite-template.ts";
import { compiledEngine } from "../../src/db/pglite-client.ts";
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { silentLogger, createLogger, type Logger } from "../../src/observe/log.ts";
import { createApp, createHandler } from "../../src/app.ts";
import type { PeerSource } from "../../src/http/fast-token-check.ts";
import type { Env } from "../../src/http/route.ts";
import { buildContext, closeContext } from "../../src/services/app-context.ts";
import { startServices } from "../../src/boot/startup.ts";
import { oidcKeys } from "../../src/db/schema.ts";
import { scratchDatabase } from "./scratch-db.ts";
import { MIGRATIONS, migrationsKey } from "./migrations-key.ts";

export type DbKind = "pglite" | "postgres";

/**
 * The password policy of test apps: any non-empty password, no list check (suites create users with
 * short fixture passwords such as "pw"). Suites about the policy pass `config: { password_policy: {} }`
 * to run with the service's defaults (tests/api/password-policy.test.ts).
 */
export const TEST_PASSWORD_POLICY = { min_length: 1, common_passwords: false };

/** Cheap argon2id for tests (production defaults are OWASP's minimum; lower values log a warning). */
export const TEST_ARGON2 = { memory_kib: 256, time_cost: 1 };

export interface TestApp {
  kind: DbKind;
  app: AppContext;
  http: Hono<Env>;
  /** `app.request()` with JSON bodies and headers made easy. */
  request(method: string, path: string, opts?: RequestOpts): Promise<TestResponse>;
  close(): Promise<void>;
}

export interface RequestOpts {
  token?: string;
  tenant?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  remoteAddr?: string;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint: tests read arbitrary JSON
  json: any;
}

let pgliteTemplate: Promise<Blob> | null = null;

/**
 * A migrated PGlite data directory, copied for each suite. It is made once per machine and set of
 * migrations (~1.8 s: the machine's initdb'd template, src/db/pglite-template.ts, copied and
 * migrated), kept beside that template under a name hashing PGlite's version and every file of
 * drizzle/, and read back by every later test process (~20 ms).
 */
export async function pgliteDump(): Promise<Blob> {
  pgliteTemplate ??= (async () => {
    const cached = join(dirname(templateDir()), `test-migrated-${migrationsKey(templateDir())}.tar`);
    if (existsSync(cached)) return new Blob([await Bun.file(cached).arrayBuffer()]);
    const dir = join(mkdtempSync(join(tmpdir(), "tessera-test-template-")), "data");
    try {
      if (!(await seedDataDir(dir))) throw new Error(`cannot make the embedded database template at ${templateDir()}`);
      const raw = await PGlite.create(dir, { ...pgliteOptions(), pgliteWasmModule: await compiledEngine() });
      const { drizzle } = await import("drizzle-orm/pglite");
      const { migrate } = await import("drizzle-orm/pglite/migrator");
      await migrate(drizzle(raw) as never, { migrationsFolder: MIGRATIONS });
      const dump = await raw.dumpDataDir("none");
      await raw.close();
      // Written aside, then renamed: test processes starting together never read half a file.
      const partial = `${cached}.${process.pid}`;
      await Bun.write(partial, dump);
      renameSync(partial, cached);
      for (const stale of readdirSync(dirname(cached)))
        if (/^test-migrated-\w+\.tar$/.test(stale) && join(dirname(cached), stale) !== cached)
          rmSync(join(dirname(cached), stale), { force: true });
      return dump;
    } finally {
      rmSync(join(dir, ".."), { recursive: true, force: true });
    }
  })();
  return pgliteTemplate;
}

async function freshPglite(): Promise<Database> {
  return openDatabase({ dataDir: "memory://", template: await pgliteDump() });
}

/** A new PostgreSQL database on the TEST_DATABASE_URL server, dropped on close. */
export async function freshPostgres(poolSize = 5): Promise<Database> {
  const scratch = await scratchDatabase("tessera_test", { migrated: true });
  const db = await openDatabase({ url: scratch.url, poolSize });
  const close = db.close;
  db.close = async () => {
    await close();
    await scratch.drop();
  };
  return db;
}

export interface TestAppOptions {
  config?: Record<string, unknown>;
  log?: Logger;
  /** Start plugins and jobs as main.ts does (default true). */
  services?: boolean;
  /** Skip the suite (e.g. a server it needs is absent and not required). */
  skip?: boolean;
  /** Open this database instead of a fresh one (e.g. a copy of a wazo-auth database). */
  database?: () => Promise<Database>;
}

/**
 * The OpenID Connect signing keys the first app of a test process generated at its start (as a
 * service does), given to every later app on a fresh database: an RSA key pair costs ~60 ms of CPU,
 * and a run of the suite starts some 300 apps. Each app still loads and signs with them itself.
 */
let processSigningKeys: (typeof oidcKeys.$inferSelect)[] | null = null;

export async function createTestApp(kind: DbKind, opts: TestAppOptions = {}): Promise<TestApp> {
  const config: Config = parseConfig({
    password_hash_iterations: 1000,
    argon2: TEST_ARGON2,
    token_cleanup_interval: 0,
    password_policy: TEST_PASSWORD_POLICY,
    // The request deadline is tested where it is the subject (tests/ops/outage.test.ts,
    // deadline-frozen): elsewhere a loaded CI machine must not turn a slow answer into a 503.
    db_timeout: 30,
    ...(opts.config ?? {}),
  });
  const database = opts.database
    ? await opts.database()
    : kind === "postgres"
      ? await freshPostgres()
      : await freshPglite();
  const log = opts.log ?? (process.env.TEST_LOG ? createLogger("debug") : silentLogger);
  const app = await buildContext(config, database, log);
  // Keys stored unencrypted (the default) on a fresh database can be the ones an earlier app made.
  const sharesKeys = opts.services !== false && !opts.database && config.oidc.key_encryption_key === null;
  if (sharesKeys && processSigningKeys) await app.db.insert(oidcKeys).values(processSigningKeys);
  if (opts.services !== false) await startServices(app);
  if (sharesKeys && !processSigningKeys) processSigningKeys = await app.db.select().from(oidcKeys);
  const http = createApp(app);
  const handle = createHandler(app, http);
  return {
    kind,
    app,
    http,
    async request(method, path, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      if (o.token) headers["X-Auth-Token"] = o.token;
      if (o.tenant) headers["Wazo-Tenant"] = o.tenant;
      let body: string | undefined = o.rawBody;
      if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers["Content-Type"] ??= "application/json";
      }
      // Through the server's handler, so the token check's in-memory shortcut is exercised too.
      const res = await handle(
        new Request(`http://localhost${path}`, { method, headers, body }),
        peerAt(o.remoteAddr ?? "127.0.0.1"),
      );
      const text = await res.text();
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: res.status, headers: res.headers, text, json };
    },
    close: () => closeContext(app),
  };
}

export function databaseKinds(): DbKind[] {
  return process.env.TEST_DATABASE_URL ? ["pglite", "postgres"] : ["pglite"];
}

/**
 * Runs `body` once per database kind, each with its own fresh app. `get()` returns the suite's
 * app inside tests.
 */
export function describeEachDb(name: string, body: (get: () => TestApp) => void, opts: TestAppOptions = {}): void {
  for (const kind of databaseKinds()) {
    (opts.skip ? describe.skip : describe)(`${name} [${kind}]`, () => {
      let t: TestApp | undefined;
      beforeAll(async () => {
        t = await createTestApp(kind, opts);
      }, 60_000);
      afterAll(async () => {
        await t?.close();
      }, 30_000);
      body(() => {
        if (!t) throw new Error("test app not ready");
        return t;
      });
    });
  }
}

/** A stand-in for Bun's server as the handler sees it: every request comes from `address`. */
export function peerAt(address: string): PeerSource {
  return { requestIP: () => ({ address }) };
}

/** The URL of the PostgreSQL database `app` uses: for a second instance on the same database. */
export async function currentDatabaseUrl(app: AppContext): Promise<string> {
  const rows = (await app.db.execute(sql`select current_database() as name`)) as unknown as Array<{ name: string }>;
  const u = new URL(process.env.TEST_DATABASE_URL!);
  u.pathname = `/${rows[0]!.name}`;
  return u.toString();
}
