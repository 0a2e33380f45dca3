// What the chaos scenarios (scenarios.ts) share: the run's private resources (a PostgreSQL cluster,
// temporary directories, cleaned up at the end), a started service, an admin token, and writes whose
// acknowledgement is recorded so that a crash can be checked for lost ones.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPgCluster, type PgCluster } from "../../tests/helpers/pg-cluster.ts";
import { basicAuth, spawnService, waitForService, type ServiceProcess } from "../../tests/helpers/service-process.ts";

const root = join(import.meta.dir, "..", "..");
export const BASE_CONFIG =
  "password_hash_iterations: 1000\nargon2: {memory_kib: 256, time_cost: 1}\nshutdown_drain_seconds: 0\ntoken_cleanup_interval: 0";

export interface Outcome {
  /** What the service did, in a few words with figures. */
  observed: string;
  ok: boolean | "skipped";
}

/** The private resources of a run, closed at its end. */
export const cleanups: Array<() => Promise<void> | void> = [];
const workDir = mkdtempSync(join(tmpdir(), "tessera-chaos-"));
cleanups.push(() => rmSync(workDir, { recursive: true, force: true }));

let clusterPromise: Promise<PgCluster> | null = null;
export function cluster(): Promise<PgCluster> {
  clusterPromise ??= startPgCluster().then((c) => {
    cleanups.push(() => c.destroy());
    bootstrap({ DATABASE_URL: c.url });
    return c;
  });
  return clusterPromise;
}

export function scenarioDir(name: string): string {
  return mkdtempSync(join(workDir, `${name}-`));
}

export function bootstrap(env: Record<string, string>): void {
  const r = Bun.spawnSync([process.execPath, "src/cli.ts", "bootstrap", "admin", "s3cret"], {
    cwd: root,
    env: { ...process.env, TESSERA_CONFIG: "", ...env },
  });
  if (r.exitCode !== 0) throw new Error(`bootstrap failed: ${r.stderr.toString().slice(0, 300)}`);
}

export async function started(dir: string, config: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const service = spawnService(dir, `${BASE_CONFIG}\n${config}`, env);
  cleanups.push(() => void service.proc.kill("SIGKILL"));
  if (!(await waitForService(service.base, 60)))
    throw new Error(`the service did not start: ${service.log().slice(-400)}`);
  return service;
}

export async function adminToken(base: string): Promise<string> {
  const r = await fetch(`${base}/token`, { method: "POST", headers: basicAuth("admin", "s3cret"), body: "{}" });
  if (r.status !== 200) throw new Error(`admin login answered ${r.status}`);
  return ((await r.json()) as { data: { token: string } }).data.token;
}

/** Creates users four at a time until `stop()`; the usernames whose creation was acknowledged. */
export async function writeUntil(base: string, token: string, stop: () => boolean): Promise<string[]> {
  const acked: string[] = [];
  const writer = async () => {
    while (!stop()) {
      const username = `chaos-${crypto.randomUUID().slice(0, 12)}`;
      try {
        const r = await fetch(`${base}/users`, {
          method: "POST",
          headers: { "X-Auth-Token": token, "Content-Type": "application/json" },
          body: JSON.stringify({ username }),
        });
        if (r.status === 200) acked.push(username);
        await r.arrayBuffer();
      } catch {
        return; // the connection died with the process
      }
    }
  };
  await Promise.all([writer(), writer(), writer(), writer()]);
  return acked;
}

export async function missingUsers(base: string, token: string, usernames: string[]): Promise<number> {
  let missing = 0;
  for (const username of usernames) {
    const r = await fetch(`${base}/users?username=${username}`, { headers: { "X-Auth-Token": token } });
    const body = (await r.json()) as { items?: unknown[] };
    if (r.status !== 200 || body.items?.length !== 1) missing++;
  }
  return missing;
}

export const ms = (since: number) => Math.round(performance.now() - since);
