// The edges of the one error body (D1 of docs/wazo-auth-differences.md): oversized headers and bodies over real HTTP, trailing
// slashes, and an OpenAPI document that states the bounds the server enforces.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { MAX_PAGING } from "../../src/domain/collection.ts";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken } from "../helpers/fixtures.ts";
import { waitForService } from "../helpers/service-process.ts";

const ERROR_KEYS = ["details", "error_id", "message", "resource", "timestamp"];

describe("the real process over real HTTP", () => {
  const dir = mkdtempSync(join(tmpdir(), "tessera-edges-"));
  const server = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  const base = `http://127.0.0.1:${port}/0.1`;
  let proc: ReturnType<typeof Bun.spawn>;

  beforeAll(async () => {
    // As `npm start` runs it: the runtime's header limit above Tessera's own.
    proc = Bun.spawn([process.execPath, "--max-http-header-size=65536", "src/main.ts"], {
      cwd: join(import.meta.dir, "../.."),
      env: {
        ...process.env,
        TESSERA_DATA_DIR: join(dir, "data"),
        TESSERA_PORT: String(port),
        TESSERA_LOG_LEVEL: "warning",
      },
      stdout: "ignore",
      stderr: "ignore",
    });
    // Generous: a loaded CI machine may take long to start a process.
    if (!(await waitForService(base, 100))) throw new Error("the service did not start");
  }, 120_000);
  afterAll(async () => {
    proc.kill("SIGTERM");
    await proc.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  test("a header over 16 KiB is a 431 with the one JSON body; a body over 1 MiB a 413", async () => {
    let r = await fetch(`${base}/users`, { headers: { "X-Padding": "a".repeat(20_000) } });
    expect([r.status, r.headers.get("Content-Type")]).toEqual([431, "application/json"]);
    let body = (await r.json()) as Record<string, unknown>;
    expect([Object.keys(body).sort(), body.error_id]).toEqual([ERROR_KEYS, "headers-too-large"]);
    r = await fetch(`${base}/token`, { method: "POST", body: JSON.stringify({ pad: "a".repeat(1_100_000) }) });
    expect(r.status).toBe(413);
    body = (await r.json()) as Record<string, unknown>;
    expect([Object.keys(body).sort(), body.error_id]).toEqual([ERROR_KEYS, "payload-too-large"]);
  });

  test("beyond the runtime's limit Bun answers alone; the service keeps serving", async () => {
    for (const size of [100_000, 1_000_000]) {
      try {
        const r = await fetch(`${base}/users`, { headers: { "X-Padding": "a".repeat(size) } });
        expect(r.status).toBe(431); // Bun's own answer, before any handler: no body
      } catch {
        // a head this large may also just be cut off by the runtime
      }
    }
    expect((await fetch(`${base}/status`, { method: "HEAD" })).status).toBe(200);
    const r = await fetch(`${base}/users/`, {});
    expect([r.status, ((await r.json()) as { error_id: string }).error_id]).toEqual([401, "unauthorized"]);
  });
});

describeEachDb("trailing slashes and the OpenAPI bounds", (get) => {
  test("a trailing slash is the same route as without it", async () => {
    const t = get();
    const token = await adminToken(t.app);
    const user = (await t.request("POST", "/0.1/users", { token, body: { username: "slashed" } })).json.uuid;
    for (const [method, path] of [
      ["GET", "/0.1/users/"],
      ["GET", "/0.1/tenants/"],
      ["GET", "/0.1/groups/"],
      ["GET", "/0.1/policies/"],
      ["GET", "/0.1/sessions/"],
      ["GET", `/0.1/users/${user}/`],
      ["GET", `/0.1/users/${user}/groups/`],
      ["GET", "/0.1/status/"],
    ] as const) {
      const slashed = await t.request(method, path, { token });
      const plain = await t.request(method, path.replace(/\/$/, ""), { token });
      expect([path, slashed.status]).toEqual([path, plain.status]);
      expect(slashed.status).toBe(200);
    }
    const created = await t.request("POST", "/0.1/groups/", { token, body: { name: "via-slash" } });
    expect(created.status).toBe(200);
    expect((await t.request("DELETE", `/0.1/groups/${created.json.uuid}/`, { token })).status).toBe(204);
  });

  test("every query parameter of the document states the bounds the server enforces", async () => {
    const t = get();
    const token = await adminToken(t.app);
    const res = await t.request("GET", "/0.1/api/api.yml");
    expect(res.text).not.toContain("9007199254740991");
    const doc = parseYaml(res.text) as {
      paths: Record<
        string,
        Record<string, { parameters: Array<{ name: string; in: string; schema: Record<string, unknown> }> }>
      >;
    };
    let checked = 0;
    for (const ops of Object.values(doc.paths)) {
      for (const op of Object.values(ops)) {
        for (const p of op.parameters.filter((x) => x.in === "query")) {
          if (p.schema.type === "integer") {
            expect([p.name, typeof p.schema.minimum, typeof p.schema.maximum]).toEqual([p.name, "number", "number"]);
            expect(p.schema.minimum as number).toBeGreaterThanOrEqual(0);
            checked++;
          }
          if (p.schema.type === "string" && !p.schema.enum && !p.schema.pattern && !p.schema.format)
            expect([p.name, typeof p.schema.maxLength]).toEqual([p.name, "number"]);
        }
      }
    }
    expect(checked).toBeGreaterThan(10);
    const limit = doc.paths["/users"]!.get!.parameters.find((p) => p.name === "limit")!.schema;
    expect(limit).toEqual({ type: "integer", minimum: 0, maximum: MAX_PAGING });
    expect((await t.request("GET", `/0.1/users?limit=${MAX_PAGING}&offset=${MAX_PAGING}`, { token })).status).toBe(200);
    for (const bad of ["limit=-1", `limit=${MAX_PAGING + 1}`, "offset=-1", `offset=${MAX_PAGING + 1}`, "limit=abc"]) {
      const r = await t.request("GET", `/0.1/users?${bad}`, { token });
      expect([bad, r.status, r.json.error_id]).toEqual([bad, 400, "invalid-data"]);
    }
  });
});
