// The real process over real HTTP: configuration errors, start, bootstrap, login, check, shutdown.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { waitForService } from "../helpers/service-process.ts";
import { tempDirs } from "../helpers/temp-dirs.ts";

const root = join(import.meta.dir, "../..");
const tempDir = tempDirs("tessera-e2e-");

function freePort(): number {
  const server = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}

async function run(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn([process.execPath, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code: await proc.exited, out, err };
}

describe("configuration errors", () => {
  test("an invalid config refuses to start, naming the key and the problem", async () => {
    const dir = tempDir();
    const file = join(dir, "config.yml");
    writeFileSync(file, "rest_api:\n  port: 99999\ndefault_token_lifetime: -3\n");
    const r = await run(["src/main.ts", "--config", file], { TESSERA_DATA_DIR: join(dir, "data") });
    expect(r.code).toBe(2);
    expect(r.err).toContain("rest_api.port");
    expect(r.err).toContain("default_token_lifetime");
  });
  test("an unreadable config file is reported", async () => {
    const r = await run(["src/main.ts"], { TESSERA_CONFIG: "/nonexistent/config.yml" });
    expect(r.code).toBe(2);
    expect(r.err).toContain("/nonexistent/config.yml");
  });
});

describe("the real process", () => {
  test("bootstrap CLI, start, login over HTTP, token check, graceful shutdown", async () => {
    const dir = tempDir();
    const env = { TESSERA_DATA_DIR: join(dir, "data"), TESSERA_PORT: String(freePort()), TESSERA_LOG_LEVEL: "info" };
    const boot = await run(["src/cli.ts", "bootstrap", "admin", "s3cret-admin"], env);
    expect(boot.code).toBe(0);
    expect(boot.out).toContain("created user admin");
    const again = await run(["src/cli.ts", "bootstrap", "admin", "s3cret-admin"], env);
    expect([again.code, again.out.includes("already exists")]).toEqual([0, true]);

    const proc = Bun.spawn([process.execPath, "src/main.ts"], {
      cwd: root,
      env: { ...process.env, ...env },
      stdout: "pipe",
      stderr: "pipe",
    });
    const base = `http://127.0.0.1:${env.TESSERA_PORT}/0.1`;
    expect(await waitForService(base, 15)).toBe(true);
    const login = await fetch(`${base}/token`, {
      method: "POST",
      headers: { Authorization: `Basic ${btoa("admin:s3cret-admin")}`, "Content-Type": "application/json" },
      body: "{}",
    });
    expect(login.status).toBe(200);
    const token = ((await login.json()) as { data: { token: string } }).data.token;
    expect((await fetch(`${base}/token/${token}?scope=auth.users.read`, { method: "HEAD" })).status).toBe(204);
    const bad = await fetch(`${base}/token`, {
      method: "POST",
      headers: { Authorization: `Basic ${btoa("admin:wrong")}` },
      body: "{}",
    });
    expect(bad.status).toBe(401);
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    const logs = await new Response(proc.stderr).text();
    expect(logs).toContain('"msg":"request"');
    expect(logs).toContain('"msg":"login"');
    expect(logs).not.toContain("s3cret-admin");
    expect(logs).not.toContain(token);
  }, 60_000);
});

describe("the embedded database is single-process", () => {
  test("a second process on the same data directory is refused with a clear message", async () => {
    const dir = tempDir();
    const env = { TESSERA_DATA_DIR: join(dir, "data"), TESSERA_PORT: String(freePort()) };
    const proc = Bun.spawn([process.execPath, "src/main.ts"], {
      cwd: root,
      env: { ...process.env, ...env },
      stdout: "pipe",
      stderr: "pipe",
    });
    await waitForService(`http://127.0.0.1:${env.TESSERA_PORT}/0.1`, 40);
    const second = await run(["src/cli.ts", "bootstrap", "x", "x-admin-password"], env);
    expect(second.code).toBe(1);
    expect(second.err).toContain("is in use by process");
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    const after = await run(["src/cli.ts", "bootstrap", "x", "x-admin-password"], env);
    expect(after.code).toBe(0);
  }, 60_000);
});
