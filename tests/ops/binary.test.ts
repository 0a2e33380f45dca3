// `npm run build` makes one executable that runs from an empty directory: build it, bootstrap an
// administrator with it, serve, log in, check a token, load the reference page's assets and the
// hosted pages' scripts, stop.
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "../../scripts/build.ts";
import { waitForService } from "../helpers/service-process.ts";

const dir = mkdtempSync(join(tmpdir(), "tessera-binary-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the single executable starts from an empty directory, creates its database and serves", async () => {
  const exe = join(dir, "bin", "tessera");
  await build(exe);
  const work = join(dir, "work");
  const { mkdirSync } = await import("node:fs");
  mkdirSync(work);
  expect(readdirSync(work)).toEqual([]);
  const server = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  // Only what a fresh machine has: no project files, no node_modules, a minimal environment.
  const env = { PATH: "/usr/bin:/bin", HOME: work, TESSERA_PORT: String(port), TESSERA_LOG_LEVEL: "warning" };
  const boot = Bun.spawnSync([exe, "bootstrap", "admin", "s3cret-admin"], {
    cwd: work,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  expect([boot.exitCode, boot.stdout.toString()]).toEqual([0, expect.stringContaining("created user admin")]);
  expect(existsSync(join(work, "data"))).toBe(true);

  const proc = Bun.spawn([exe, "serve"], { cwd: work, env, stdout: "pipe", stderr: "pipe" });
  try {
    const base = `http://127.0.0.1:${port}/0.1`;
    expect(await waitForService(base, 20)).toBe(true);
    const login = await fetch(`${base}/token`, {
      method: "POST",
      headers: { Authorization: `Basic ${btoa("admin:s3cret-admin")}` },
      body: "{}",
    });
    expect(login.status).toBe(200);
    const token = ((await login.json()) as { data: { token: string } }).data.token;
    expect((await fetch(`${base}/token/${token}?scope=auth.users.read`, { method: "HEAD" })).status).toBe(204);
    const status = (await (await fetch(`${base}/status`, { headers: { "X-Auth-Token": token } })).json()) as {
      plugins: { status: string };
    };
    expect(status.plugins.status).toBe("ok"); // the stock plugins are inside the executable
    expect((await fetch(`${base}/api/docs/swagger-ui-bundle.js`)).status).toBe(200);
    // The hosted pages' passkey scripts are inside too (the account page loads them; web/pages/oidc-assets.ts).
    for (const [name, marker] of [
      ["passkey.js", "data-passkey"],
      ["webauthn-browser.js", "SimpleWebAuthnBrowser"],
    ]) {
      const script = await fetch(`${base}/oidc/assets/${name}`);
      expect([script.status, script.headers.get("content-type")]).toEqual([200, "text/javascript; charset=utf-8"]);
      expect(await script.text()).toContain(marker!);
    }
    const account = await fetch(`${base}/oidc/account`);
    expect(account.status).toBe(200);
    expect(await account.text()).toContain("Sign in to manage your two-step verification");
    // A second one on the same port: one line and exit 4, before it creates anything.
    const elsewhere = join(dir, "elsewhere");
    mkdirSync(elsewhere);
    const second = Bun.spawnSync([exe, "serve"], { cwd: elsewhere, env, stdout: "pipe", stderr: "pipe" });
    expect([second.exitCode, second.stderr.toString().trim().split("\n").length]).toEqual([4, 1]);
    expect(second.stderr.toString()).toContain("the port is in use");
    expect(readdirSync(elsewhere)).toEqual([]);
  } finally {
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
  }
}, 120_000);
