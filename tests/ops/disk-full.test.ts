// A full disk under the embedded database (a small tmpfs mounted by the test; root only): the
// start names the cause, and writes at run time answer 503 service-unavailable with the cause logged.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitForService } from "../helpers/service-process.ts";

const root = join(import.meta.dir, "../..");
const mountPoint = mkdtempSync(join(tmpdir(), "tessera-disk-"));

function mount(sizeMb: number): boolean {
  return Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${sizeMb}m`, "tmpfs", mountPoint]).exitCode === 0;
}
const unmount = () => Bun.spawnSync(["umount", "-l", mountPoint]);

const canMount = process.getuid?.() === 0 && mount(1) && (unmount(), true);
if (!canMount) console.warn("cannot mount a tmpfs (not root?): the full-disk tests are skipped");
afterAll(() => rmSync(mountPoint, { recursive: true, force: true }));

function freePort(): number {
  const server = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}

describe.skipIf(!canMount)("a full disk", () => {
  beforeAll(() => {
    unmount();
  });

  test("at start: the service refuses to start and says the disk is full", async () => {
    expect(mount(2)).toBe(true);
    try {
      const proc = Bun.spawn([process.execPath, "src/main.ts"], {
        cwd: root,
        env: { ...process.env, TESSERA_DATA_DIR: join(mountPoint, "data"), TESSERA_PORT: String(freePort()) },
        stdout: "pipe",
        stderr: "pipe",
      });
      const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
      expect(code).toBe(1);
      const line = JSON.parse(err.split("\n").find((l) => l.includes("cannot open the database"))!);
      expect(line.code).toBe("ENOSPC");
      expect(line.error).toMatch(/^no space left on the device of .* free\)(: \S.*)?$/);
    } finally {
      unmount();
    }
  }, 120_000);

  test("at run time: writes answer 503 service-unavailable and the log names the cause", async () => {
    expect(mount(160)).toBe(true);
    const port = freePort();
    const env = {
      ...process.env,
      TESSERA_DATA_DIR: join(mountPoint, "data"),
      TESSERA_PORT: String(port),
      TESSERA_LOG_LEVEL: "info",
    };
    const boot = Bun.spawnSync([process.execPath, "src/cli.ts", "bootstrap", "admin", "s3cret-admin"], {
      cwd: root,
      env,
    });
    expect(boot.exitCode).toBe(0);
    const proc = Bun.spawn([process.execPath, "src/main.ts"], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
    const stderr = new Response(proc.stderr).text();
    try {
      const base = `http://127.0.0.1:${port}/0.1`;
      expect(await waitForService(base, 90)).toBe(true);
      const login = await fetch(`${base}/token`, {
        method: "POST",
        headers: { Authorization: `Basic ${btoa("admin:s3cret-admin")}` },
        body: "{}",
      });
      const token = ((await login.json()) as { data: { token: string } }).data.token;
      // Fill what is left of the disk.
      try {
        for (let i = 0; ; i++) writeFileSync(join(mountPoint, `filler-${i}`), Buffer.alloc(1024 * 1024));
      } catch {}
      try {
        for (let i = 0; ; i++) writeFileSync(join(mountPoint, `small-${i}`), Buffer.alloc(4096));
      } catch {}
      const statuses = new Set<number>();
      let body: { error_id?: string } = {};
      for (let i = 0; i < 200; i++) {
        const r = await fetch(`${base}/users`, {
          method: "POST",
          headers: { "X-Auth-Token": token, "Content-Type": "application/json" },
          body: JSON.stringify({
            username: `u${i}-${"x".repeat(200)}`,
            password: "p".repeat(100),
            firstname: "y".repeat(2000),
          }),
        });
        statuses.add(r.status);
        if (r.status >= 500) {
          body = (await r.json()) as { error_id?: string };
          break;
        }
        await r.arrayBuffer();
      }
      expect(statuses.has(500)).toBe(false);
      expect(statuses.has(503)).toBe(true);
      expect(body.error_id).toBe("service-unavailable");
    } finally {
      proc.kill("SIGKILL");
      await proc.exited;
      unmount();
    }
    const logs = await stderr;
    expect(logs).toMatch(/"database unavailable".*(ENOSPC|no space|53100)/i);
    expect(logs).not.toContain("s3cret-admin");
  }, 180_000);
});
