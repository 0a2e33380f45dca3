// An operator's wazo-auth configuration: the config.yml wazo-auth ships (current and recent releases)
// loads, each of its keys Tessera has no use for named in one warning line; a typo of a Tessera key
// is still refused; `extra_config_files` (conf.d/) is merged as wazo-auth merges it, and
// `tessera config check` shows where each value came from.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, loadConfigWithSource } from "../../src/config/config.ts";
import { START_EXIT } from "../../src/boot/start-checks.ts";
import { freePort } from "../helpers/service-process.ts";

const root = join(import.meta.dir, "../..");
const fixtures = join(import.meta.dir, "../fixtures/wazo-auth-config");
const cli = join(root, "src/cli.ts");
const main = join(root, "src/main.ts");
const dir = mkdtempSync(join(tmpdir(), "tessera-confd-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(args: string[], cwd: string, env: Record<string, string> = {}) {
  const p = Bun.spawn([process.execPath, ...args], {
    cwd,
    env: { ...process.env, TESSERA_CONFIG: "", DATABASE_URL: "", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code: await p.exited, out, err };
}

const load = (path: string, env: NodeJS.ProcessEnv = {}) => loadConfigWithSource(["--config", path], env);

let n = 0;
/** A directory with `config.yml` and the given files of its `conf.d/`. */
function layout(main: string, confd: Record<string, string>): string {
  const work = join(dir, `l${n++}`);
  mkdirSync(join(work, "conf.d"), { recursive: true });
  writeFileSync(join(work, "config.yml"), main);
  for (const [name, text] of Object.entries(confd)) writeFileSync(join(work, "conf.d", name), text);
  return work;
}

describe("wazo-auth's shipped config.yml", () => {
  // Each release's file, with the keys it holds that Tessera has no use for.
  const releases: Record<string, string[]> = {
    "config-2025.yml": [
      "email_confirmation_get_response_body_template'",
      "email_confirmation_get_mimetype'",
      "rest_api.max_threads",
      "enabled_external_auth_plugins",
      "idp_plugins",
      "service_discovery",
    ],
    "config-2024.yml": [
      "email_confirmation_get_response_body_template'",
      "email_confirmation_get_mimetype'",
      "confd_db_uri",
      "rest_api.max_threads",
      "enabled_external_auth_plugins",
      "service_discovery",
    ],
    "config-2020.yml": [
      "pid_filename",
      "email_confirmation_get_reponse_body_template'",
      "email_confirmation_get_mimetype'",
      "rest_api.max_threads",
      "enabled_backend_plugins",
      "enabled_external_auth_plugins",
      "consul",
      "confd",
      "confd_db_uri",
      "service_discovery",
    ],
  };
  for (const [file, ignored] of Object.entries(releases)) {
    test(`${file} loads; one warning line per ignored key`, () => {
      const loaded = load(join(fixtures, file));
      // Its conf.d (/etc/wazo-auth/conf.d/) is not on this machine: a warning too, as wazo-auth says.
      const keyWarnings = loaded.warnings.filter((w) => !w.startsWith("extra_config_files:"));
      const named = keyWarnings.map((w) => w.slice(0, w.indexOf(": wazo-auth's key, ignored: ")));
      expect(named.sort()).toEqual(ignored.sort());
      expect(loaded.config.rest_api.port).toBe(9497);
      expect(loaded.config.db_uri).toStartWith("postgresql://asterisk:");
    });
  }

  test("tessera config check: exit 0, the warnings on stderr", async () => {
    const r = await run([cli, "config", "check", "--config", join(fixtures, "config-2024.yml")], dir);
    expect(r.code).toBe(0);
    expect(r.out).toContain("# configuration valid");
    expect(r.err).toContain(
      "warning: email_confirmation_get_mimetype': wazo-auth's key, ignored: a key with a stray quote, as wazo-auth's shipped config.yml spells it: wazo-auth ignores it too; the setting is `email_confirmation_get_mimetype`",
    );
    expect(r.err).toContain("warning: confd_db_uri: wazo-auth's key, ignored:");
  });

  test("a typo of a Tessera key is still refused", () => {
    const work = layout("email_confirmation_get_mimetyp: text/html\nrest_api:\n  max_thread: 3\n", {});
    expect(() => load(join(work, "config.yml"))).toThrow(
      /email_confirmation_get_mimetyp: unknown key; did you mean `email_confirmation_get_mimetype`\?[\s\S]*rest_api\.max_thread: unknown key/,
    );
  });
});

describe("extra_config_files (conf.d/), as wazo-auth merges it", () => {
  test("files in name order, the first one winning, all over the main file; mappings merge, lists accumulate", () => {
    const work = layout(
      "extra_config_files: conf.d\nrest_api:\n  port: 9000\n  trusted_proxies: [10.0.0.1]\nlog_level: debug\n",
      {
        "20-later.yml": "rest_api:\n  port: 9200\n  trusted_proxies: [10.0.0.3]\npublic_url: https://late.example\n",
        "10-first.yml": "rest_api:\n  port: 9100\n  trusted_proxies: [10.0.0.2]\n",
        ".hidden.yml": "rest_api:\n  port: 1\n",
        "notes.yaml": "rest_api:\n  port: 2\n",
      },
    );
    const loaded = load(join(work, "config.yml"));
    expect(loaded.config.rest_api.port).toBe(9100);
    expect(loaded.config.rest_api.trusted_proxies).toEqual(["10.0.0.2", "10.0.0.3", "10.0.0.1"]);
    expect(loaded.config.public_url).toBe("https://late.example");
    expect(loaded.config.log_level).toBe("debug");
    expect(loaded.files).toEqual([
      join(work, "conf.d/10-first.yml"),
      join(work, "conf.d/20-later.yml"),
      join(work, "config.yml"),
    ]);
    expect(loaded.warnings).toEqual([]);
  });

  test("an unknown key in a conf.d file is refused like one in the main file", () => {
    const work = layout("extra_config_files: conf.d\n", { "50-local.yml": "rest_api:\n  prot: 1\n" });
    expect(() => load(join(work, "config.yml"))).toThrow(
      /rest_api\.prot: unknown key; did you mean `rest_api\.port`\?/,
    );
  });

  test("a conf.d file that is not YAML is refused, naming it; a missing directory is a warning", () => {
    const bad = layout("extra_config_files: conf.d\n", { "50-local.yml": "rest_api: [\n" });
    expect(() => load(join(bad, "config.yml"))).toThrow(ConfigError);
    expect(() => load(join(bad, "config.yml"))).toThrow(join(bad, "conf.d/50-local.yml"));
    const missing = layout("extra_config_files: /nonexistent/tessera/conf.d/\n", {});
    expect(load(join(missing, "config.yml")).warnings).toEqual([
      "extra_config_files: cannot read the directory /nonexistent/tessera/conf.d (ENOENT); no extra file read",
    ]);
  });

  test("tessera config check shows each value with the file it came from", async () => {
    const work = layout("extra_config_files: conf.d\nrest_api:\n  port: 9000\nlog_level: debug\n", {
      "10-local.yml": "rest_api:\n  port: 9100\n",
    });
    const r = await run([cli, "config", "check", "--config", "config.yml"], work, { TESSERA_LISTEN: "0.0.0.0" });
    expect([r.code, r.err]).toEqual([0, ""]);
    expect(r.out).toContain(`  port: 9100 # ${join(work, "conf.d/10-local.yml")}\n`);
    expect(r.out).toContain("log_level: debug # config.yml\n");
    expect(r.out).toContain("  listen: 0.0.0.0 # environment\n");
    expect(r.out).toContain(`${join(work, "conf.d/10-local.yml")}, config.yml (highest priority first)`);
  });

  test("a db_uri set only in conf.d leads the start to PostgreSQL, not to the embedded database; warnings logged", async () => {
    const closed = freePort();
    const work = layout("extra_config_files: conf.d\ndb_timeout: 1\nconsul: {host: consul.example}\n", {
      "50-db.yml": `db_uri: postgres://postgres@127.0.0.1:${closed}/none\n`,
    });
    const r = await run([main, "--config", "config.yml"], work, { TESSERA_PORT: String(freePort()) });
    expect(r.code).toBe(START_EXIT.failed);
    expect(JSON.parse(r.err.trim().split("\n").at(-1)!)).toMatchObject({
      msg: "cannot open the database",
      code: "ECONNREFUSED",
    });
    expect(existsSync(join(work, "data"))).toBe(false);
    // The start logged the ignored wazo-auth key once, as a warning line.
    const warned = r.err.split("\n").filter((l) => l.includes("consul: wazo-auth's key, ignored"));
    expect(warned.map((l) => JSON.parse(l).level)).toEqual(["warning"]);
  }, 30_000);
});

// An unreadable conf.d file is refused too (not skipped as wazo-auth skips it), unless run as root.
test.skipIf(process.getuid?.() === 0)("an unreadable conf.d file is refused", () => {
  const work = layout("extra_config_files: conf.d\n", { "50-secret.yml": "log_level: debug\n" });
  chmodSync(join(work, "conf.d/50-secret.yml"), 0o000);
  expect(() => load(join(work, "config.yml"))).toThrow(/cannot read config file .*50-secret\.yml/);
});
