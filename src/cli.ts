// Command line: `serve` (default), `migrate`, `bootstrap <username> <password>`, and
// `import|export <postgres URL> [--force]` (copy to/from the embedded database).
//   bun src/cli.ts bootstrap admin s3cret     (npm run bootstrap -- admin s3cret)
import { ConfigError, loadConfig } from "./config.ts";
import { openDatabase } from "./db/index.ts";
import { adoptedWazoRevision } from "./db/adopt.ts";
import { createLogger } from "./log.ts";
import { buildContext, closeContext } from "./services/app-context.ts";
import { bootstrapUser } from "./services/bootstrap.ts";
import { serve } from "./main.ts";
import { runTransfer } from "./transfer-cli.ts";

const USAGE = `usage: tessera [serve] [--config PATH]
       tessera migrate [--config PATH]
       tessera bootstrap USERNAME PASSWORD [--config PATH]   (or env TESSERA_BOOTSTRAP_USERNAME / _PASSWORD)
       tessera import postgres://… [--force] [--config PATH]   (wazo-auth or Tessera PostgreSQL → embedded database)
       tessera export postgres://… [--force] [--config PATH]   (embedded database → PostgreSQL)`;

async function main(argv: string[]): Promise<number> {
  const args = argv.slice(2);
  const positional = args.filter((a, i) => !a.startsWith("--") && args[i - 1] !== "--config");
  const command = positional[0] ?? "serve";
  if (command === "serve") {
    await serve(argv);
    return -1; // keeps running
  }
  if (command !== "migrate" && command !== "bootstrap" && command !== "import" && command !== "export") {
    console.error(USAGE);
    return 2;
  }
  let config;
  try {
    config = loadConfig(argv);
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`tessera: ${e.message}`);
      return 2;
    }
    throw e;
  }
  if (command === "import" || command === "export") return runTransfer(command, positional[1], args.includes("--force"), config);
  const log = createLogger(config.log_level);
  let database;
  try {
    database = await openDatabase({ url: config.db_uri, dataDir: config.data_dir, poolSize: 2, timeoutSeconds: config.db_timeout });
  } catch (e) {
    console.error(`tessera: cannot open the database: ${(e as Error).message}`);
    return 1;
  }
  const app = await buildContext(config, database, log);
  try {
    if (command === "migrate") {
      const revision = adoptedWazoRevision(database.db);
      console.log(`database migrated (${database.kind})${revision ? `: adopted the wazo-auth database at revision ${revision}` : ""}`);
      return 0;
    }
    const username = positional[1] ?? process.env.TESSERA_BOOTSTRAP_USERNAME;
    const password = positional[2] ?? process.env.TESSERA_BOOTSTRAP_PASSWORD;
    if (!username || !password) {
      console.error(USAGE);
      return 2;
    }
    const result = await bootstrapUser(app, username, password);
    console.log(result.created ? `created user ${username} (${result.userUuid}) with policy ${config.bootstrap_user_policy_slug}` : `user ${username} (${result.userUuid}) already exists; policy ${config.bootstrap_user_policy_slug} ensured`);
    return 0;
  } finally {
    await closeContext(app);
  }
}

const code = await main(process.argv);
if (code >= 0) process.exit(code);
