// Commands on the local database (as configured: `db_uri`/DATABASE_URL, or the embedded one in
// `data_dir`): `serve`, `migrate`, `bootstrap`, `import`, `export`. They read the same configuration as the service.
import { defineCommand, type ArgsDef } from "citty";
// The configuration, the database and the services are imported when a local command runs, not
// with the CLI: a remote command (`tessera users list`) then loads ~0.1 s of CPU less (their
// modules: zod's schema, drizzle's, the services), measured on a 2-core machine.
import type { Config } from "../config/config.ts";
import type { AppContext } from "../boot/context.ts";
import { CliFailure, EXIT, printJson, printTable } from "./output.ts";

export const configArg = {
  config: {
    type: "string",
    description: "Configuration file (else TESSERA_CONFIG, else ./config.yml)",
    valueHint: "PATH",
  },
} as const satisfies ArgsDef;

export async function configFrom(path: string | undefined): Promise<Config> {
  const { ConfigError, loadConfig } = await import("../config/config.ts");
  try {
    return loadConfig(path ? ["--config", path] : []);
  } catch (e) {
    if (e instanceof ConfigError) throw new CliFailure(`tessera: ${e.message}`, EXIT.usage);
    throw e;
  }
}

/** Opens (and migrates) the configured database, runs `work`, closes. */
export async function withLocalApp<T>(
  configPath: string | undefined,
  work: (app: AppContext, config: Config) => Promise<T>,
): Promise<T> {
  const config = await configFrom(configPath);
  const [{ openDatabase }, { buildContext, closeContext }, { createLogger }] = await Promise.all([
    import("../db/index.ts"),
    import("../services/app-context.ts"),
    import("../observe/log.ts"),
  ]);
  let database;
  try {
    database = await openDatabase({
      url: config.db_uri,
      dataDir: config.data_dir,
      poolSize: 2,
      timeoutSeconds: config.db_timeout,
    });
  } catch (e) {
    throw new CliFailure(`tessera: cannot open the database: ${(e as Error).message}`, EXIT.refused);
  }
  const app = await buildContext(config, database, createLogger(config.log_level));
  try {
    return await work(app, config);
  } finally {
    await closeContext(app);
  }
}

export const serveCommand = defineCommand({
  meta: { name: "serve", description: "Run the service (the default command)" },
  args: configArg,
  async run({ args }) {
    const { serve } = await import("../main.ts");
    await serve(args.config ? ["--config", args.config] : []);
    await new Promise(() => {}); // serves until a signal ends the process
  },
});

export const migrateCommand = defineCommand({
  meta: { name: "migrate", description: "Create or upgrade the database schema, then exit" },
  args: { ...configArg, json: { type: "boolean", description: "JSON output", default: false } },
  async run({ args }) {
    await withLocalApp(args.config, async (app) => {
      const { adoptedWazoRevision } = await import("../db/adopt.ts");
      const revision = adoptedWazoRevision(app.database.db);
      if (args.json) printJson({ migrated: true, database: app.database.kind, adopted_wazo_auth_revision: revision });
      else
        console.log(
          `database migrated (${app.database.kind})${revision ? `: adopted the wazo-auth database at revision ${revision}` : ""}`,
        );
    });
  },
});

export const bootstrapCommand = defineCommand({
  meta: {
    name: "bootstrap",
    description: "Create (or repair) the first administrator: an internal user holding ACL `#` (idempotent)",
  },
  args: {
    username: { type: "positional", description: "Login (or env TESSERA_BOOTSTRAP_USERNAME)", required: false },
    password: { type: "positional", description: "Password (or env TESSERA_BOOTSTRAP_PASSWORD)", required: false },
    ...configArg,
    json: { type: "boolean", description: "JSON output", default: false },
  },
  async run({ args }) {
    const username = args.username ?? process.env.TESSERA_BOOTSTRAP_USERNAME;
    const password = args.password ?? process.env.TESSERA_BOOTSTRAP_PASSWORD;
    if (!username || !password)
      throw new CliFailure(
        "usage: tessera bootstrap USERNAME PASSWORD (or env TESSERA_BOOTSTRAP_USERNAME / TESSERA_BOOTSTRAP_PASSWORD)",
        EXIT.usage,
      );
    await withLocalApp(args.config, async (app, config) => {
      const [{ bootstrapUser }, { passwordRefusal }] = await Promise.all([
        import("../services/identity/bootstrap.ts"),
        import("../services/auth/password-policy.ts"),
      ]);
      const result = await bootstrapUser(app, username, password).catch((e) => {
        const refusal = passwordRefusal(e);
        if (refusal) throw new CliFailure(`tessera bootstrap: password refused: ${refusal}`, EXIT.usage);
        throw e;
      });
      const policy = config.bootstrap_user_policy_slug;
      if (args.json) printJson({ created: result.created, user_uuid: result.userUuid, username, policy });
      else
        console.log(
          result.created
            ? `created user ${username} (${result.userUuid}) with policy ${policy}`
            : `user ${username} (${result.userUuid}) already exists; policy ${policy} ensured`,
        );
    });
  },
});

/**
 * `tessera users collisions`: logins of different users that compare as one (PRECIS, RFC 8265
 * §3.3), written before the comparison was this strict. Reported, never changed; exit 1 when any.
 */
export const usersCollisionsCommand = defineCommand({
  meta: {
    name: "collisions",
    description:
      "List logins of different users that look the same (full-width, case, compatibility forms); exit 1 when any (local database)",
  },
  args: { ...configArg, json: { type: "boolean", description: "JSON output", default: false } },
  async run({ args }) {
    const { findLoginCollisions } = await import("../services/identity/login-names.ts");
    const found = await withLocalApp(args.config, (app) => findLoginCollisions(app.db));
    if (args.json) printJson({ collisions: found });
    else if (found.length === 0) console.log("no colliding logins");
    else
      printTable(
        found.flatMap((c) => c.logins.map((l) => ({ key: c.key, ...l }))),
        ["key", "login", "kind", "user_uuid", "tenant_uuid"],
      );
    if (found.length)
      throw new CliFailure(
        args.json
          ? ""
          : `${found.length} colliding login${found.length > 1 ? "s" : ""}: rename or delete all but one user of each`,
        EXIT.refused,
      );
  },
});

/** `import` / `export` between a PostgreSQL database and the embedded one (db/transfer.ts). */
function transferCommand(command: "import" | "export") {
  return defineCommand({
    meta: {
      name: command,
      description:
        command === "import"
          ? "Copy a wazo-auth or Tessera PostgreSQL database into the embedded one (progress on stderr)"
          : "Copy the embedded database to PostgreSQL (progress on stderr)",
    },
    args: {
      url: { type: "positional", description: "postgres://USER@HOST/DB", required: true },
      force: { type: "boolean", description: "Replace a target that already holds data", default: false },
      ...configArg,
    },
    async run({ args }) {
      const { runTransfer } = await import("./transfer.ts");
      const code = await runTransfer(command, args.url, args.force, await configFrom(args.config));
      if (code !== EXIT.ok) throw new CliFailure("", code);
    },
  });
}

export const importCommand = transferCommand("import");
export const exportCommand = transferCommand("export");

export const rotateOidcKeysCommand = defineCommand({
  meta: {
    name: "rotate-oidc-keys",
    description:
      "Replace the OpenID Connect signing keys now; the old ones stay published 24 h so the ID tokens they signed still verify",
  },
  args: { ...configArg, json: { type: "boolean", description: "JSON output", default: false } },
  async run({ args }) {
    await withLocalApp(args.config, async (app) => {
      const { ensureSigningKeys, rotateSigningKeys } = await import("../services/oidc/keys.ts");
      await ensureSigningKeys(app);
      const kids = await rotateSigningKeys(app);
      if (args.json) printJson({ rotated: true, current_kids: kids });
      else console.log(`rotated the OpenID Connect signing keys; current key ids: ${kids.join(", ")}`);
    });
  },
});
