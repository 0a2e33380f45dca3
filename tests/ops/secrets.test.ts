// Secrets never leave the process: a database error's parameters (password hash, salt) stay out of
// the log, and GET /0.1/config masks credentials however they are written (D12 of docs/wazo-auth-differences.md).
import { expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createLogger, errorFields } from "../../src/observe/log.ts";
import { maskSecrets } from "../../src/config/secrets.ts";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken, tokenFor } from "../helpers/fixtures.ts";

const lines: string[] = [];
const log = createLogger("debug", (l) => lines.push(l));

describeEachDb(
  "a database error in the log",
  (get) => {
    test("a 500 logs the error class, SQLSTATE and a sanitised message: no parameter, hash or salt", async () => {
      const t = get();
      await t.app.db.execute(
        sql.raw(
          "alter table auth_user add constraint tessera_test_boom check (firstname is distinct from 'boom-marker')",
        ),
      );
      const token = await adminToken(t.app);
      lines.length = 0;
      const r = await t.request("POST", "/0.1/users", {
        token,
        body: { username: "victim", firstname: "boom-marker", password: "hunter2-password" },
      });
      expect([r.status, r.json.error_id, Object.keys(r.json).sort()]).toEqual([
        500,
        "internal-error",
        ["details", "error_id", "message", "resource", "timestamp"],
      ]);
      const logged = lines.filter((l) => l.includes('"unexpected error"'));
      expect(logged.length).toBe(1);
      const entry = JSON.parse(logged[0]!);
      expect(entry.code).toBe("23514");
      expect(typeof entry.error_class).toBe("string");
      expect(entry.error).toContain('constraint "tessera_test_boom"');
      const all = lines.join("\n");
      for (const leak of ["boom-marker", "hunter2", "params", "insert into", "victim"]) expect(all).not.toContain(leak);
      expect(all).not.toMatch(/[0-9a-f]{128}/); // the hex PBKDF2 hash
      expect(r.text).not.toContain("boom-marker");
      await t.app.db.execute(sql.raw("alter table auth_user drop constraint tessera_test_boom"));
    });
  },
  { log },
);

test("errorFields: a query error is reduced to its cause; quoted values and URI credentials dropped", () => {
  const cause = Object.assign(new Error('invalid input syntax for type uuid: "s3cr3t-value"'), {
    code: "22P02",
    name: "PostgresError",
  });
  const wrapped = Object.assign(
    new Error('Failed query: insert into "auth_user" values ($1, $2)\nparams: 9f86d081884c7d65,c2FsdA=='),
    { params: ["9f86d081884c7d65"], cause },
  );
  const f = errorFields(wrapped);
  expect(f).toEqual({ error: 'invalid input syntax for type uuid: "…"', error_class: "PostgresError", code: "22P02" });
  expect(errorFields(new Error("connect amqp://guest:pa55@broker:5672/ failed")).error).toBe(
    "connect amqp://guest:********@broker:5672/ failed",
  );
  expect(
    errorFields(Object.assign(new Error("Failed query: select 1\nparams: x"), { params: [] })).error,
  ).not.toContain("params: x");
});

test("maskSecrets: URIs with unescaped @ or /, secret query parameters, secret keys at any depth", () => {
  const masked = maskSecrets({
    db_uri: "postgres://u:p@ss@h/db",
    amqp: { uri: "amqp://guest:gu/est@host:5672/" },
    ldap: "ldaps://cn=admin:pw@ldap.example.com/?password=qs-secret&user=bob&api_key=k123",
    plain_url: "https://auth.example.com:443/api/auth",
    bare_userinfo: "https://abcdef@host/x",
    my_db_passwd: "plain-1",
    clientSecret: "plain-2",
    service_credentials: { user: "u", pin: 1234 },
    plugins: {
      idp: {
        sso: { module: "./x.ts", config: { secret: "plain-3", list: [{ Password: "plain-4" }], apiKey: "plain-5" } },
      },
    },
    access_tokens: ["plain-6"],
    default_token_lifetime: 7200,
    password_reset_email_template: "/etc/tessera/reset.jinja",
    google: { token_url: "https://oauth2.googleapis.com/token" },
    debug: false,
  }) as Record<string, any>;
  expect(masked.db_uri).toBe("postgres://u:********@h/db");
  expect(masked.amqp.uri).toBe("amqp://guest:********@host:5672/");
  expect(masked.ldap).toBe("ldaps://cn=admin:********@ldap.example.com/?password=********&user=bob&api_key=********");
  expect(masked.plain_url).toBe("https://auth.example.com:443/api/auth");
  expect(masked.bare_userinfo).toBe("https://********@host/x");
  expect(masked.service_credentials).toEqual({ user: "********", pin: "********" });
  expect(masked.default_token_lifetime).toBe(7200);
  expect(masked.password_reset_email_template).toBe("/etc/tessera/reset.jinja");
  expect(masked.google.token_url).toBe("https://oauth2.googleapis.com/token");
  expect(masked.debug).toBe(false);
  const text = JSON.stringify(masked);
  for (const secret of ["p@ss", "gu/est", "qs-secret", "k123", "abcdef", "plain-", "1234", ":pw@"])
    expect(text).not.toContain(secret);
});

describeEachDb("GET /0.1/config masks what the audit found", (get) => {
  test("credentials in URIs, query strings and unknown secret keys are masked", async () => {
    const t = get();
    const config = t.app.config as Record<string, unknown>;
    config.db_uri = "postgres://u:p@ss@h/db";
    config.oauth2_redirect_base_url = "https://auth.example.com/cb?token=qs-token";
    config.custom_section = { webhook_secret: "hook-secret", nested: [{ api_key: "nested-key" }] };
    const { token } = await tokenFor(t.app, { acl: ["auth.config.read"] });
    const r = await t.request("GET", "/0.1/config", { token });
    expect(r.status).toBe(200);
    expect(r.json.db_uri).toBe("postgres://u:********@h/db");
    expect(r.json.custom_section).toEqual({ webhook_secret: "********", nested: [{ api_key: "********" }] });
    for (const secret of ["p@ss", "qs-token", "hook-secret", "nested-key"]) expect(r.text).not.toContain(secret);
    config.db_uri = null;
  });

  test("exactly the listed secret keys are masked; harmless keys that merely contain pass, token or key are shown", async () => {
    const t = get();
    const config = t.app.config as Record<string, any>;
    delete config.custom_section; // left by the test above
    config.bootstrap_user_password = "boot-pw";
    config.smtp.password = "smtp-pw";
    const { token } = await tokenFor(t.app, { acl: ["auth.config.read"] });
    const r = await t.request("GET", "/0.1/config", { token });
    const leaves = (v: unknown, path: string[] = []): Array<[string[], unknown]> =>
      v !== null && typeof v === "object" && !Array.isArray(v)
        ? Object.entries(v).flatMap(([k, x]) => leaves(x, [...path, k]))
        : [[path, v]];
    const masked = leaves(r.json)
      .filter(([, v]) => v === "********")
      .map(([p]) => p.join("."));
    expect(masked.sort()).toEqual(["bootstrap_user_password", "smtp.password"]);
    const lookalikes = leaves(r.json).filter(
      ([p]) => /pass|secret|token|key|credential|private|cookie/i.test(p.at(-1)!) && !masked.includes(p.join(".")),
    );
    for (const [p, v] of lookalikes)
      expect([p.join("."), v]).toEqual([p.join("."), p.reduce((o, k) => o?.[k], config as any)]);
    const shown = lookalikes.map(([p]) => p.join("."));
    for (const k of [
      "password_hash_algorithm",
      "password_hash_iterations",
      "login_throttling.password_reset_max_requests",
      "password_reset_expiration",
      "default_token_lifetime",
      "token_cleanup_interval",
      "saml.key_file",
    ])
      expect(shown).toContain(k);
    expect(r.json.password_hash_algorithm).toBe("argon2id");
    for (const secret of ["boot-pw", "smtp-pw"]) expect(r.text).not.toContain(secret);
    config.bootstrap_user_password = null;
    config.smtp.password = null;
  });
});
