// Real Tessera processes (`bun src/main.ts`) for the high-availability tests and bench: several
// instances on one PostgreSQL, each on a free loopback port with its own config file, started from
// this checkout or from another one (the previous version in a git worktree). Every instance is
// killed by `stopAll`, whatever the test did.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";

export const ROOT = join(import.meta.dir, "..", "..");

export function freePort(): number {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}

export interface Instance {
  name: string;
  port: number;
  /** `http://127.0.0.1:port/0.1` */
  url: string;
  proc: Subprocess;
  /** Lines the instance wrote on standard error (its log), for a failing test's message. */
  log: string[];
  kill(signal?: NodeJS.Signals | number): void;
}

export interface InstanceOptions {
  dbUri: string;
  /** Checkout to run (`src/main.ts` under it); this one by default. */
  root?: string;
  /** Extra YAML config lines. */
  extra?: Record<string, unknown>;
  /** Listen on this port (a restarted instance takes its old place behind the load balancer). */
  port?: number;
  /** Wait for `GET /0.1/ready` (default), or `HEAD /0.1/status` for versions older than readiness. */
  probe?: "ready" | "status";
}

/** Cheap hashing and no background purge: the tests measure availability, not argon2. */
function configText(dbUri: string, port: number, extra: Record<string, unknown>): string {
  const config = {
    db_uri: dbUri,
    rest_api: { listen: "127.0.0.1", port },
    db_pool_size: 4,
    db_timeout: 2,
    shutdown_drain_seconds: 0.5,
    token_cleanup_interval: 0,
    password_hash_algorithm: "pbkdf2_sha512",
    password_hash_iterations: 1000,
    argon2: { memory_kib: 256, time_cost: 1 },
    login_throttling: { enabled: false },
    ...extra,
  };
  return JSON.stringify(config); // JSON is YAML
}

export class InstanceFleet {
  readonly instances: Instance[] = [];
  private readonly dir = mkdtempSync(join(tmpdir(), "tessera-fleet-"));

  /** Creates the first admin (`admin`/`s3cret-admin`) with the CLI of `root`, before any instance serves. */
  bootstrap(opts: InstanceOptions): void {
    const file = join(this.dir, "bootstrap.yml");
    writeFileSync(file, configText(opts.dbUri, 0, opts.extra ?? {}));
    const root = opts.root ?? ROOT;
    const boot = Bun.spawnSync([process.execPath, "src/cli.ts", "bootstrap", "admin", "s3cret-admin"], {
      cwd: root,
      env: { ...process.env, TESSERA_CONFIG: file },
    });
    if (boot.exitCode !== 0) throw new Error(`bootstrap failed: ${boot.stderr.toString()}`);
  }

  /** Starts one instance and waits until it is ready (GET /0.1/ready answers 200). */
  async start(name: string, opts: InstanceOptions): Promise<Instance> {
    const port = opts.port ?? freePort();
    const file = join(this.dir, `${name}.yml`);
    writeFileSync(file, configText(opts.dbUri, port, opts.extra ?? {}));
    const proc = Bun.spawn([process.execPath, "src/main.ts"], {
      cwd: opts.root ?? ROOT,
      env: { ...process.env, TESSERA_CONFIG: file },
      stdout: "ignore",
      stderr: "pipe",
    });
    const log: string[] = [];
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of proc.stderr as ReadableStream<Uint8Array>)
        log.push(...decoder.decode(chunk).split("\n").filter(Boolean));
    })();
    const instance: Instance = {
      name,
      port,
      url: `http://127.0.0.1:${port}/0.1`,
      proc,
      log,
      kill: (signal = "SIGKILL") => proc.kill(signal),
    };
    this.instances.push(instance);
    if (!(await waitReady(instance.url, 60, proc, opts.probe)))
      throw new Error(`instance ${name} did not become ready:\n${log.slice(-20).join("\n")}`);
    return instance;
  }

  async stopAll(): Promise<void> {
    for (const i of this.instances) i.proc.kill("SIGKILL");
    await Promise.all(this.instances.map((i) => i.proc.exited));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Polls GET {base}/ready (or HEAD {base}/status) until 200; false after `seconds` or when the process exits. */
export async function waitReady(
  base: string,
  seconds: number,
  proc?: Subprocess,
  probe: "ready" | "status" = "ready",
): Promise<boolean> {
  for (const until = Date.now() + seconds * 1000; Date.now() < until; ) {
    if (proc?.exitCode !== null && proc?.exitCode !== undefined) return false;
    try {
      const res = probe === "ready" ? await fetch(`${base}/ready`) : await fetch(`${base}/status`, { method: "HEAD" });
      if (res.status === 200) return true;
    } catch {
      // not listening yet
    }
    await Bun.sleep(100);
  }
  return false;
}

/** Logs in `admin`/`s3cret-admin` through `base`; returns the token. */
export async function adminLogin(base: string, expiration = 3600): Promise<string> {
  const res = await fetch(`${base}/token`, {
    method: "POST",
    headers: { Authorization: `Basic ${btoa("admin:s3cret-admin")}`, "Content-Type": "application/json" },
    body: JSON.stringify({ expiration }),
  });
  if (res.status !== 200) throw new Error(`login → ${res.status} ${await res.text()}`);
  return ((await res.json()) as { data: { token: string } }).data.token;
}
