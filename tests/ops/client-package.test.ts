// The TypeScript client as a package: `npm pack` of clients/typescript (built to ESM JavaScript and
// declarations by its prepack), installed into an empty project without the network, imported from
// plain Node and from Bun, typechecked by a consumer, and calling a started service.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { createHandler } from "../../src/app.ts";
import { clientDir, clientVersionFor } from "../../scripts/generate-client.ts";
import { createTestApp, databaseKinds, type TestApp } from "../helpers/app.ts";
import { adminToken } from "../helpers/fixtures.ts";

const dir = mkdtempSync(join(tmpdir(), "tessera-client-pkg-"));
const consumer = join(dir, "consumer");
let tarball = "";

function sh(cmd: string[], cwd: string) {
  const r = Bun.spawnSync(cmd, {
    cwd,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, npm_config_audit: "false", npm_config_fund: "false" },
  });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

beforeAll(() => {
  const pack = sh(["npm", "pack", "--pack-destination", dir], clientDir);
  if (pack.code !== 0) throw new Error(`npm pack failed: ${pack.err}`);
  tarball = join(dir, readdirSync(dir).find((f) => f.startsWith("tessera-client-") && f.endsWith(".tgz"))!);
  sh(["mkdir", "-p", consumer], dir);
  writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  // Offline: its dependency (openapi-fetch, and openapi-fetch's own) is packed from the project's
  // installed copy and installed beside it, so npm needs no registry.
  const deps = ["openapi-fetch", "openapi-typescript-helpers"].map((name) => {
    const r = sh(["npm", "pack", "--pack-destination", dir, join(import.meta.dir, "../..", "node_modules", name)], dir);
    if (r.code !== 0) throw new Error(`npm pack ${name} failed: ${r.err}`);
    return join(dir, r.out.trim().split("\n").pop()!);
  });
  const install = sh(["npm", "install", "--offline", "--no-package-lock", tarball, ...deps], consumer);
  if (install.code !== 0) throw new Error(`npm install of the tarball failed: ${install.err}`);
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the tarball holds built JavaScript and declarations, an exports map, the Apache-2.0 licence, and the API's version", () => {
  const listing = sh(["tar", "-tzf", tarball], dir).out.split("\n").filter(Boolean).sort();
  expect(listing).toEqual([
    "package/LICENSE",
    "package/README.md",
    "package/dist/index.d.ts",
    "package/dist/index.js",
    "package/dist/operations.d.ts",
    "package/dist/operations.js",
    "package/dist/schema.d.ts",
    "package/package.json",
  ]);
  const pkg = JSON.parse(readFileSync(join(consumer, "node_modules/@tessera/client/package.json"), "utf8"));
  expect(pkg.license).toBe("Apache-2.0");
  expect(pkg.exports["."]).toEqual({
    types: "./dist/index.d.ts",
    import: "./dist/index.js",
    default: "./dist/index.js",
  });
  const api = (parse(readFileSync(join(clientDir, "openapi.yml"), "utf8")) as { info: { version: string } }).info
    .version;
  expect(pkg.version).toBe(clientVersionFor(api, pkg.version));
  // 0.1.x speaks /0.1: the major and minor of the service release the document describes.
  expect(pkg.version.startsWith(`${api.split(".").slice(0, 2).join(".")}.`)).toBe(true);
  // No TypeScript source is left for a runtime to load.
  expect(readFileSync(join(consumer, "node_modules/@tessera/client/dist/index.js"), "utf8")).not.toMatch(
    /from "\.\/[^"]+\.ts"/,
  );
});

test("a TypeScript consumer typechecks against the declarations (NodeNext resolution)", () => {
  writeFileSync(
    join(consumer, "check.ts"),
    `import { createTesseraClient, TesseraError, type User } from "@tessera/client";
const c = createTesseraClient({ baseUrl: "http://127.0.0.1:1" });
export async function names(): Promise<string[]> {
  const page = await c.ops.listUsers({ params: { query: { limit: 1 } } });
  const users: User[] = page.items;
  return users.map((u) => u.username ?? "");
}
export const isError = (e: unknown) => e instanceof TesseraError && e.status === 404;
// @ts-expect-error: an operation that does not exist
c.ops.noSuchOperation();
`,
  );
  const tsc = join(clientDir, "node_modules/.bin/tsc");
  const compilerOptions = {
    noEmit: true,
    strict: true,
    module: "nodenext",
    moduleResolution: "nodenext",
    target: "es2022",
    lib: ["es2022", "dom"],
    types: [],
  };
  writeFileSync(join(consumer, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["check.ts"] }));
  const r = sh([tsc, "-p", "tsconfig.json"], consumer);
  expect(r.out + r.err).toBe("");
  expect(r.code).toBe(0);
}, 60_000);

for (const kind of databaseKinds()) {
  let t: TestApp;
  let server: ReturnType<typeof Bun.serve>;
  let token = "";
  test(`[${kind}] imported from plain Node and from Bun, it logs nothing and calls a started service`, async () => {
    t = await createTestApp(kind);
    const handle = createHandler(t.app, t.http);
    server = Bun.serve({ port: 0, fetch: (req, srv) => handle(req, srv) });
    token = await adminToken(t.app);
    try {
      writeFileSync(
        join(consumer, "call.mjs"),
        `import { createTesseraClient, TesseraError } from "@tessera/client";
const c = createTesseraClient({ baseUrl: process.env.BASE });
c.token = process.env.TOKEN;
const name = "pkg-" + process.argv[2];
const created = await c.ops.createUser({ body: { username: name, password: "s3cret-pkg" } });
const listed = await c.ops.listUsers({ params: { query: { search: name } } });
const missing = await c.ops.getUser({ params: { path: { user_uuid: crypto.randomUUID() } } }).catch((e) => e);
const login = await createTesseraClient({ baseUrl: process.env.BASE }).login({ username: name, password: "s3cret-pkg", expiration: 60 });
console.log(JSON.stringify({ created: created.username, listed: listed.items.map((u) => u.uuid), uuid: created.uuid,
  missing: missing instanceof TesseraError ? [missing.status, missing.body.error_id] : String(missing),
  valid: await c.isTokenValid(login.token), invalid: await c.isTokenValid(crypto.randomUUID()) }));
`,
      );
      const env = { ...process.env, BASE: `http://127.0.0.1:${server.port}`, TOKEN: token };
      for (const runtime of [["node"], [process.execPath]]) {
        const p = Bun.spawn([...runtime, "call.mjs", `${kind}-${runtime[0] === "node" ? "node" : "bun"}`], {
          cwd: consumer,
          env,
          stdout: "pipe",
          stderr: "pipe",
        });
        const [out, err, code] = await Promise.all([
          new Response(p.stdout).text(),
          new Response(p.stderr).text(),
          p.exited,
        ]);
        expect([code, err]).toEqual([0, ""]);
        const result = JSON.parse(out);
        expect(result).toEqual({
          created: expect.stringMatching(/^pkg-/),
          listed: [result.uuid],
          uuid: expect.any(String),
          missing: [404, "not-found"],
          valid: true,
          invalid: false,
        });
      }
    } finally {
      server.stop(true);
      await t.close();
    }
  }, 60_000);
}
