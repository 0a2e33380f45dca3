// HAProxy (Debian's package) in front of Tessera instances, on a free loopback port, run in the
// foreground by the test and killed afterwards. The configuration is the one docs/scaling.md documents
// ("Scaling and high availability"): readiness health check, retries and redispatch for the
// requests that may be replayed.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { freePort } from "./tessera-instances.ts";

export const haproxyBinary: string | null =
  Bun.which("haproxy") ??
  (Bun.spawnSync(["test", "-x", "/usr/sbin/haproxy"]).exitCode === 0 ? "/usr/sbin/haproxy" : null);

export interface Haproxy {
  port: number;
  /** `http://127.0.0.1:port/0.1` */
  url: string;
  config: string;
  stop(): Promise<void>;
}

/**
 * The HTTP load-balancing configuration. Retries: a connection that failed before the request was
 * sent (`conn-failure`) is retried on another instance for every method; a request sent to an
 * instance that died before answering (`empty-response`) is replayed only when it changes nothing:
 * GET or HEAD (token checks and reads) and token introspection (a POST that only reads) — never a
 * login, a creation or a revocation, whose first attempt may have committed.
 * Backup servers: the same instances, unchecked, used only while no instance is ready.
 */
export function haproxyConfig(port: number, servers: { name: string; port: number }[]): string {
  return [
    "global",
    "  maxconn 4096",
    "defaults",
    "  mode http",
    "  timeout connect 1s",
    "  timeout client 30s",
    "  timeout server 30s",
    "  timeout check 1s",
    "  retries 3",
    "  option redispatch 1",
    "  retry-on conn-failure empty-response",
    "frontend tessera",
    `  bind 127.0.0.1:${port}`,
    "  default_backend tessera_instances",
    "backend tessera_instances",
    "  balance roundrobin",
    "  acl read_only_post path /0.1/oidc/introspect",
    "  option http-buffer-request",
    "  http-request disable-l7-retry unless METH_GET || read_only_post",
    "  http-response set-header X-Served-By %s",
    "  option httpchk",
    "  http-check send meth GET uri /0.1/ready ver HTTP/1.1 hdr Host tessera",
    "  http-check expect status 200",
    "  default-server inter 500ms fastinter 200ms downinter 500ms fall 2 rise 2",
    ...servers.map((s) => `  server ${s.name} 127.0.0.1:${s.port} check`),
    // When no instance is ready (the database is away: a failover), send requests to them all the
    // same rather than answer HAProxy's own 503 page: each answers by its own policy — the JSON 503,
    // or token checks from its cache under token_check_staleness.
    ...servers.map((s) => `  server ${s.name}-unready 127.0.0.1:${s.port} backup`),
    "",
  ].join("\n");
}

/** Starts HAProxy in the foreground (`-db`) and waits until its frontend accepts connections. */
export async function startHaproxy(servers: { name: string; port: number }[]): Promise<Haproxy> {
  if (!haproxyBinary) throw new Error("haproxy is not installed (Debian package haproxy)");
  const dir = mkdtempSync(join(tmpdir(), "tessera-haproxy-"));
  const port = freePort();
  const config = haproxyConfig(port, servers);
  const file = join(dir, "haproxy.cfg");
  writeFileSync(file, config);
  const check = Bun.spawnSync([haproxyBinary, "-c", "-q", "-f", file]);
  if (check.exitCode !== 0)
    throw new Error(`haproxy rejects its configuration: ${check.stderr.toString()}${check.stdout.toString()}`);
  const proc: Subprocess = Bun.spawn([haproxyBinary, "-db", "-f", file], { stdout: "ignore", stderr: "ignore" });
  const url = `http://127.0.0.1:${port}/0.1`;
  for (let i = 0; i < 100; i++) {
    try {
      await fetch(`${url}/ready`);
      break;
    } catch {
      await Bun.sleep(50);
    }
  }
  return {
    port,
    url,
    config,
    async stop() {
      proc.kill("SIGKILL");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
