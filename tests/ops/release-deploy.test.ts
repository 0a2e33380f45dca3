// Releases and deployment files: the version is one (package.json, `tessera --version`, the OpenAPI
// document's info.version, the latest CHANGELOG entry; semantic versioning), and the systemd unit in
// deploy/ runs what the repository provides: its ExecStart command exists in the CLI, its
// environment names the variables the configuration reads, its data directory is writable under its
// sandbox, its stop signal and timeout fit the shutdown, and `systemd-analyze verify` accepts it.
// (The Dockerfile cannot be built here: no container engine.)
import { afterAll, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { tesseraCommand } from "../../src/cli/main.ts";
import { loadConfigWithSource } from "../../src/config/config.ts";
import { VERSION } from "../../src/boot/version.ts";
import { createTestApp } from "../helpers/app.ts";

const root = join(import.meta.dir, "../..");
const dir = mkdtempSync(join(tmpdir(), "tessera-deploy-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

test("one version: package.json, tessera --version, OpenAPI info.version, the latest CHANGELOG entry", async () => {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
  expect(pkg.version).toMatch(SEMVER);
  expect(VERSION).toBe(pkg.version);
  const cli = Bun.spawnSync([process.execPath, "src/cli.ts", "--version"], { cwd: root });
  expect(cli.stdout.toString().trim()).toBe(pkg.version);
  const t = await createTestApp("pglite", { services: false });
  try {
    const doc = parse((await t.request("GET", "/0.1/api/api.yml")).text) as { info: { version: string } };
    expect(doc.info.version).toBe(pkg.version);
  } finally {
    await t.close();
  }
  const committed = parse(readFileSync(join(root, "clients/typescript/openapi.yml"), "utf8")) as {
    info: { version: string };
  };
  expect(committed.info.version).toBe(pkg.version);
  // The first released entry (`## X.Y.Z - YYYY-MM-DD`) is this version.
  const released = [...readFileSync(join(root, "CHANGELOG.md"), "utf8").matchAll(/^## (\S+) - (\d{4}-\d\d-\d\d)$/gm)];
  expect(released.length).toBeGreaterThan(0);
  expect(released[0]![1]).toBe(pkg.version);
});

/** The unit's `Key=value` lines (the last one wins, as in systemd), comments dropped. */
function unitKeys(text: string): Map<string, string[]> {
  const keys = new Map<string, string[]>();
  for (const line of text.split("\n")) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (m) keys.set(m[1]!, [...(keys.get(m[1]!) ?? []), m[2]!]);
  }
  return keys;
}

const unitText = readFileSync(join(root, "deploy/tessera.service"), "utf8");
const unit = unitKeys(unitText);
const one = (key: string) => unit.get(key)?.at(-1) ?? "";

test("the systemd unit's ExecStart, environment and paths match the repository", async () => {
  // ExecStart: the single executable `npm run build` makes (dist/tessera, installed as the unit's
  // comment says), with a command the CLI has.
  const [binary, command, ...rest] = one("ExecStart").split(/\s+/);
  expect(binary).toBe("/usr/local/bin/tessera");
  expect(unitText).toContain("install -m 755 dist/tessera /usr/local/bin/tessera");
  expect(readFileSync(join(root, "scripts/build.ts"), "utf8")).toContain('join(root, "dist", "tessera")');
  expect(Object.keys((await tesseraCommand.subCommands) as object)).toContain(command!);
  expect(rest).toEqual([]);
  // The environment it sets is read by the configuration, and the data directory lies in the
  // state directory, the one place ProtectSystem=strict leaves writable.
  const env = Object.fromEntries(unit.get("Environment")!.map((e) => e.split("=", 2) as [string, string]));
  writeFileSync(join(dir, "config.yml"), "log_level: info\n");
  const loaded = loadConfigWithSource([], { ...env, TESSERA_CONFIG: join(dir, "config.yml") });
  expect(loaded.path).toBe(join(dir, "config.yml"));
  expect(env.TESSERA_CONFIG).toBe("/etc/tessera/config.yml");
  expect(loaded.config.data_dir).toBe(env.TESSERA_DATA_DIR!);
  expect(one("ProtectSystem")).toBe("strict");
  expect(env.TESSERA_DATA_DIR!.startsWith(`/var/lib/${one("StateDirectory")}/`)).toBe(true);
  expect(one("WorkingDirectory")).toBe(`/var/lib/${one("StateDirectory")}`);
  // Stopping: the signal the service drains on, and time for the drain and the bounded close.
  expect(one("KillSignal")).toBe("SIGTERM");
  const c = loaded.config;
  expect(Number(one("TimeoutStopSec"))).toBeGreaterThan(c.shutdown_drain_seconds + 2 * (c.db_timeout + 5));
});

test("systemd-analyze verify accepts the unit (and does flag a wrong key, so it checks)", () => {
  const analyze = Bun.which("systemd-analyze");
  if (!analyze) return console.log("systemd-analyze is not installed: skipped");
  // verify insists that ExecStart's binary exists: a stand-in at a temporary path.
  const binary = join(dir, "tessera");
  writeFileSync(binary, "#!/bin/sh\nexit 0\n");
  chmodSync(binary, 0o755);
  const verify = (text: string, name: string) => {
    const file = join(dir, name);
    writeFileSync(file, text.replaceAll("/usr/local/bin/tessera", binary));
    const r = Bun.spawnSync([analyze, "verify", file]);
    return { code: r.exitCode, err: r.stderr.toString() };
  };
  expect(verify(unitText, "tessera.service")).toEqual({ code: 0, err: "" });
  expect(verify(unitText.replace("KillSignal=", "KillSignl="), "typo.service").err).toContain("Unknown key");
});
