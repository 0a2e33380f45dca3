// A real `tessera` service for the command-line suites: its own directory, port and (on PostgreSQL)
// scratch database, the bootstrap administrator, and `tessera …` run against it as an operator would.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTesseraClient, type TesseraClient } from "../../clients/typescript/index.ts";
import { scratchDatabase } from "./scratch-db.ts";
import { freePort, waitForService } from "./service-process.ts";

/** The repository, where `tessera` runs from. */
export const repoRoot = join(import.meta.dir, "..", "..");

/** The database kinds the suites run on: PGlite, and PostgreSQL when TEST_DATABASE_URL is set. */
export const cliKinds = (): Array<"pglite" | "postgres"> =>
  process.env.TEST_DATABASE_URL ? ["pglite", "postgres"] : ["pglite"];

export interface CliRun {
  code: number;
  out: string;
  err: string;
}

export class CliService {
  readonly dir: string;
  readonly url: string;
  /** What every `tessera` run gets: the config file, data directory, port and URL of this service. */
  readonly env: Record<string, string>;
  /** The bootstrap administrator's credentials, as the CLI reads them from the environment. */
  readonly admin = { TESSERA_AUTH_USER: "admin", TESSERA_AUTH_PASSWORD: "s3cret-admin" };
  private proc: ReturnType<typeof Bun.spawn> | undefined;
  private scratch: { url: string; drop(): Promise<void> } | undefined;

  /** `more` adds to `env` (it gets the service's directory). */
  constructor(
    private readonly kind: "pglite" | "postgres",
    private readonly name: string,
    more: (dir: string) => Record<string, string> = () => ({}),
  ) {
    this.dir = mkdtempSync(join(tmpdir(), `tessera-${name}-`));
    const port = freePort();
    this.url = `http://127.0.0.1:${port}`;
    this.env = {
      TESSERA_CONFIG: join(this.dir, "config.yml"),
      TESSERA_DATA_DIR: join(this.dir, "data"),
      TESSERA_PORT: String(port),
      TESSERA_LOG_LEVEL: "warning",
      TESSERA_URL: this.url,
      NO_COLOR: "",
      ...more(this.dir),
    };
  }

  /** `tessera …` (the CLI on Bun) against this service, optionally fed `stdin`. */
  readonly tessera = async (args: string[], extraEnv: Record<string, string> = {}, stdin?: string): Promise<CliRun> => {
    const p = Bun.spawn([process.execPath, "src/cli.ts", ...args], {
      cwd: repoRoot,
      env: { ...process.env, ...this.env, ...extraEnv },
      stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
    return { code: await p.exited, out, err };
  };

  /** Bootstraps the administrator, starts the service, and returns a client logged in as it. */
  async start(): Promise<TesseraClient> {
    writeFileSync(join(this.dir, "config.yml"), "password_hash_iterations: 1000\n");
    if (this.kind === "postgres") {
      this.scratch = await scratchDatabase(`tessera_${this.name.replaceAll("-", "_")}`);
      this.env.DATABASE_URL = this.scratch.url;
    }
    const bootstrap = await this.tessera(["bootstrap", "admin", this.admin.TESSERA_AUTH_PASSWORD]);
    if (bootstrap.code !== 0) throw new Error(`tessera bootstrap failed: ${bootstrap.err}`);
    this.proc = Bun.spawn([process.execPath, "src/main.ts"], {
      cwd: repoRoot,
      env: { ...process.env, ...this.env },
      stdout: "ignore",
      stderr: "ignore",
    });
    if (!(await waitForService(`${this.url}/0.1`, 60))) throw new Error("tessera did not start");
    const client = createTesseraClient({ baseUrl: this.url });
    await client.login({ username: "admin", password: this.admin.TESSERA_AUTH_PASSWORD });
    return client;
  }

  async stop(): Promise<void> {
    this.proc?.kill("SIGTERM");
    await this.proc?.exited;
    await this.scratch?.drop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
