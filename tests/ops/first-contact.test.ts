// What a newcomer meets first, on the real process: a typo in the configuration is refused (with
// the key it probably meant), `tessera config check` shows the effective configuration, a taken port
// or an unreachable database ends the start in one line with its own exit code before anything is
// created, and a first start says how to create the first administrator.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig } from "../../src/config/config.ts";
import { START_EXIT } from "../../src/boot/start-checks.ts";
import { scratchDatabase } from "../helpers/scratch-db.ts";
import { freePort, waitForService } from "../helpers/service-process.ts";

const root = join(import.meta.dir, "../..");
const dir = mkdtempSync(join(tmpdir(), "tessera-first-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** A fresh working directory with `config.yml` holding `yaml`. */
function workDir(yaml = ""): string {
  const work = join(dir, `w${n++}`);
  mkdirSync(work);
  writeFileSync(join(work, "config.yml"), yaml);
  return work;
}

/** Runs `args` (bun …) in `cwd` to its end; resolves to its exit code and output. */
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

const main = join(root, "src/main.ts");
const cli = join(root, "src/cli.ts");
/** No stack trace: no `at fn (file:line)` frame, no Bun source excerpt. */
const noStack = (text: string) => expect(text).not.toMatch(/^\s+at |\n\s*\d+ \|/m);

describe("unknown configuration keys", () => {
  test("each is named with the closest known key; the rest of the file still validates", () => {
    const raw = {
      rest_api: { prot: 45040 },
      log_levl: "debug",
      port: 1,
      default_policies: { p: { acls: ["a"] } },
      plugins: { backends: { x: { module: "m", prio: 3 } } },
      zzzz: 1,
    };
    let message = "";
    try {
      parseConfig(raw, { strict: true });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(
      message
        .split("\n")
        .slice(1)
        .map((l) => l.trim()),
    ).toEqual([
      "rest_api.prot: unknown key; did you mean `rest_api.port`?",
      "log_levl: unknown key; did you mean `log_level`?",
      "port: unknown key; did you mean `rest_api.port`?",
      "default_policies.p.acls: unknown key; did you mean `default_policies.p.acl`?",
      "plugins.backends.x.prio: unknown key; did you mean `plugins.backends.x.priority`?",
      "zzzz: unknown key",
    ]);
  });

  test("wazo-auth's keys and the external-auth plugins' sections are accepted", () => {
    const wazo = {
      user: "wazo-auth",
      config_file: "/etc/wazo-auth/config.yml",
      extra_config_files: "/etc/wazo-auth/conf.d",
      enabled_backend_plugins: { ldap_user: true, wazo_user: true },
      enabled_external_auth_plugins: { google: true },
      idp_plugins: { saml: { enabled: true, priority: 1 } },
      db_upgrade_on_startup: false,
      db_connect_retry_timeout_seconds: 300,
      consul: { scheme: "http", port: 8500 },
      service_discovery: { enabled: false },
      oauth2_synchronization_ws_url_template: "wss://oauth.wazo.io/ws/{state}",
      rest_api: { max_threads: 25, certificate: null, private_key: null, port: 9497 },
      saml: { domains: {}, xmlsec_binary: "/usr/bin/xmlsec1", xml_files_dir: "/var/lib/wazo-auth/saml/" },
      google: { scope: ["a"] },
      microsoft: {},
      plugins: {
        external_auth: { github: "./github.ts" },
        backends: { x: { module: "m", config: { anything: { goes: 1 } } } },
      },
      github: { client_id: "x" },
    };
    expect(parseConfig(wazo, { strict: true }).rest_api.port).toBe(9497);
    expect(() => parseConfig({ gitlab: {} }, { strict: true })).toThrow("gitlab: unknown key");
  });

  test("the service refuses a typo at start: exit 2, the key named, nothing created", async () => {
    const work = workDir("rest_api:\n  prot: 45040\nlog_levl: debug\n");
    const r = await run([main], work, { TESSERA_PORT: String(freePort()) });
    expect(r.code).toBe(START_EXIT.config);
    expect(r.err).toContain("rest_api.prot: unknown key; did you mean `rest_api.port`?");
    expect(r.err).toContain("log_levl: unknown key; did you mean `log_level`?");
    noStack(r.err);
    expect(existsSync(join(work, "data"))).toBe(false);
  });
});

describe("tessera config check", () => {
  test("config.example.yml is valid and every key of it is known", async () => {
    const r = await run([cli, "config", "check", "--config", join(root, "config.example.yml")], dir);
    expect([r.code, r.err]).toEqual([0, ""]);
    expect(r.out).toContain("# configuration valid");
    expect(r.out).toContain("port: 9497");
  });

  test("prints the effective configuration, file and environment merged, secrets masked", async () => {
    const work = workDir(
      "smtp:\n  password: hunter2-smtp\ndb_uri: postgres://tessera:pg-s3cret@db.example/auth\nbootstrap_user_password: boot-s3cret\n",
    );
    const r = await run([cli, "config", "check", "--json"], work, {
      TESSERA_CONFIG: join(work, "config.yml"),
      TESSERA_PORT: "45678",
    });
    expect(r.code).toBe(0);
    const shown = JSON.parse(r.out);
    expect(shown.rest_api.port).toBe(45678);
    expect(shown.db_uri).toBe("postgres://tessera:********@db.example/auth");
    expect(shown.smtp.password).toBe("********");
    for (const secret of ["hunter2-smtp", "pg-s3cret", "boot-s3cret"]) expect(r.out).not.toContain(secret);
  });

  test("an invalid configuration: exit 2 and each problem, the suggestion included", async () => {
    const work = workDir("log_level: loud\nsmtp:\n  hostnme: mail\n");
    const r = await run([cli, "config", "check", "--config", "config.yml"], work);
    expect(r.code).toBe(2);
    expect(r.out).toBe("");
    expect(r.err).toContain("smtp.hostnme: unknown key; did you mean `smtp.hostname`?");
    expect(r.err).toContain("log_level:");
    noStack(r.err);
  });
});

describe("start-up failures end in one line, before anything is created", () => {
  test("the port is in use: exit 4 at once, no database created", async () => {
    const holder = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const work = workDir();
      const started = performance.now();
      for (const args of [[main], [cli, "serve"]]) {
        const r = await run(args, work, { TESSERA_PORT: String(holder.port) });
        expect(r.code).toBe(START_EXIT.port);
        expect(r.err.trim().split("\n")).toEqual([
          expect.stringContaining(`cannot listen on 127.0.0.1:${holder.port} (rest_api): the port is in use`),
        ]);
      }
      expect(performance.now() - started).toBeLessThan(10_000); // no migrations were run first
      expect(existsSync(join(work, "data"))).toBe(false);
    } finally {
      holder.stop(true);
    }
  }, 30_000);

  test("the metrics port is in use: the same", async () => {
    const holder = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const work = workDir();
      const r = await run([main], work, {
        TESSERA_PORT: String(freePort()),
        TESSERA_METRICS_PORT: String(holder.port),
      });
      expect(r.code).toBe(START_EXIT.port);
      expect(r.err).toContain("(metrics): the port is in use");
      expect(existsSync(join(work, "data"))).toBe(false);
    } finally {
      holder.stop(true);
    }
  }, 30_000);

  test("the database is unreachable: exit 1, one line naming the cause", async () => {
    const work = workDir("db_timeout: 1\n");
    const r = await run([main], work, {
      TESSERA_PORT: String(freePort()),
      DATABASE_URL: `postgres://postgres@127.0.0.1:${freePort()}/none`,
    });
    expect(r.code).toBe(START_EXIT.failed);
    const lines = r.err.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: "error",
      msg: "cannot open the database",
      code: "ECONNREFUSED",
    });
  }, 30_000);

  test("a plugin that cannot load: one line, exit 1", async () => {
    const work = workDir("plugins:\n  backends:\n    broken: {module: ./no-such-plugin.ts, required: true}\n");
    const r = await run([main], work, { TESSERA_PORT: String(freePort()) });
    expect(r.code).toBe(START_EXIT.failed);
    expect(r.err).toContain('"msg":"start-up failed"');
    noStack(r.err);
  }, 60_000);
});

describe("the first start says what to do next", () => {
  const databases: { name: string; url?: () => Promise<{ url: string; drop(): Promise<void> }> }[] = [
    { name: "PGlite" },
  ];
  if (process.env.TEST_DATABASE_URL)
    databases.push({ name: "PostgreSQL", url: () => scratchDatabase("tessera_first") });

  for (const database of databases) {
    test(`${database.name}: with no user, one line tells how to create the first administrator; not once one exists`, async () => {
      const scratch = await database.url?.();
      const work = workDir("password_hash_iterations: 1000\n");
      const port = freePort();
      const env: Record<string, string> = {
        TESSERA_PORT: String(port),
        TESSERA_LOG_LEVEL: "warning",
        ...(scratch ? { DATABASE_URL: scratch.url } : {}),
      };
      const serveOnce = async () => {
        const proc = Bun.spawn([process.execPath, main], {
          cwd: work,
          env: { ...process.env, TESSERA_CONFIG: "", ...env },
          stdout: "ignore",
          stderr: "pipe",
        });
        const up = await waitForService(`http://127.0.0.1:${port}/0.1`, 60);
        proc.kill("SIGTERM");
        const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
        expect([up, code]).toEqual([true, 0]);
        return err.split("\n").filter((l) => l.includes("no user yet"));
      };
      try {
        const hint = await serveOnce();
        expect(hint).toHaveLength(1);
        expect(hint[0]).toContain("npm run bootstrap -- NAME PASSWORD");
        expect(hint[0]).toContain("bootstrap_user_on_startup");
        const boot = await run([cli, "bootstrap", "admin", "s3cret-admin"], work, env);
        expect(boot.code).toBe(0);
        expect(await serveOnce()).toEqual([]);
      } finally {
        await scratch?.drop();
      }
    }, 120_000);
  }
});
