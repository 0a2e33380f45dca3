// The OpenAPI contract: lint-clean for Redocly's recommended rules, one camelCase operationId per
// operation, the right security scheme on each, the common answers by construction, and exactly the
// routes the app answers.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { routeGroups } from "../../src/app.ts";

const root = join(import.meta.dir, "../..");
const METHODS = ["get", "put", "post", "delete", "patch", "head"];

type Operation = {
  operationId: string;
  security: Record<string, string[]>[];
  parameters: { name: string; in: string }[];
  responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>;
  "x-required-acl"?: string;
  requestBody?: unknown;
};

let t: TestApp;
let noTenantRoutes: Set<string>;
let yaml: string;
let doc: {
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, unknown>; schemas: Record<string, unknown> };
  info: { license?: unknown };
};
const operations = () =>
  Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([m]) => METHODS.includes(m))
      .map(([method, op]) => ({ path, method, op })),
  );

beforeAll(async () => {
  t = await createTestApp("pglite");
  noTenantRoutes = new Set(
    routeGroups(t.app)
      .flatMap((g) => g.specs)
      .filter((s) => s.noTenant)
      .map((s) => `${s.method} ${s.path}`),
  );
  const r = await t.request("GET", "/0.1/api/api.yml");
  expect(r.status).toBe(200);
  yaml = r.text;
  doc = parse(yaml);
}, 60_000);
afterAll(() => t?.close());

describe("the OpenAPI document", () => {
  test("passes `redocly lint` (recommended rules) with no error", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-openapi-"));
    try {
      const file = join(dir, "api.yml");
      writeFileSync(file, yaml);
      const proc = Bun.spawn(
        [
          join(root, "node_modules/.bin/redocly"),
          "lint",
          "--config",
          join(root, "redocly.yaml"),
          "--format",
          "stylish",
          file,
        ],
        {
          cwd: root,
          stdout: "pipe",
          stderr: "pipe",
          env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
        },
      );
      const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      const code = await proc.exited;
      if (code !== 0) console.error(out, err);
      expect(code).toBe(0);
      expect(`${out}${err}`).toContain("Your API description is valid");
      expect(`${out}${err}`).not.toMatch(/\d+ warnings?\b/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  test("every operation has a unique camelCase operationId", () => {
    const ids = operations().map(({ op }) => op.operationId);
    expect(ids.every((id) => /^[a-z][A-Za-z0-9]*$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    const byRoute = Object.fromEntries(
      operations().map(({ path, method, op }) => [`${method.toUpperCase()} ${path}`, op.operationId]),
    );
    expect(byRoute).toMatchObject({
      "POST /token": "createToken",
      "HEAD /token/{token}": "checkToken",
      "DELETE /token/{token}": "revokeToken",
      "GET /users/{user_uuid}/sessions": "listUserSessions",
      "PUT /groups/{group_uuid}/users/{user_uuid}": "addGroupUser",
      "DELETE /groups/{group_uuid}/users/{user_uuid}": "removeGroupUser",
      "PUT /policies/{policy}/acl/{access}": "addPolicyAcl",
      "GET /users/me/tokens": "listMyTokens",
    });
  });

  test("security: token schemes on ACL-protected operations, Basic on login, none on public ones", () => {
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual([
      "BasicAuth",
      "BearerAuth",
      "TokenQuery",
      "XAuthToken",
    ]);
    for (const { path, method, op } of operations()) {
      const schemes = op.security.flatMap((s) => Object.keys(s));
      if (method === "post" && path === "/token") expect(op.security).toEqual([{ BasicAuth: [] }, {}]);
      else if (op["x-required-acl"]) expect(schemes).toEqual(expect.arrayContaining(["XAuthToken", "BearerAuth"]));
      else expect(op.security).toEqual([]);
    }
    const check = doc.paths["/token/{token}"]!.head!;
    expect(check.security).toEqual([]);
  });

  test("authenticated operations: Wazo-Tenant where a tenant is resolved, 401/403 with the error body", () => {
    for (const { path, method, op } of operations()) {
      if (!op["x-required-acl"]) continue;
      for (const code of ["401", "403"])
        expect(op.responses[code]?.content?.["application/json"]?.schema).toEqual({
          $ref: "#/components/schemas/Error",
        });
      const hasTenant = op.parameters.some((p) => p.name === "Wazo-Tenant" && p.in === "header");
      const noTenant = noTenantRoutes.has(`${method} ${path}`);
      expect([method, path, hasTenant]).toEqual([method, path, !noTenant]);
      expect(op.parameters.some((p) => p.name === "X-Auth-Token" || p.name === "Authorization")).toBe(false);
    }
  });

  test("bodies: 400 on every operation with input, typed success bodies for the resources", () => {
    for (const { op } of operations()) if (op.requestBody) expect(op.responses["400"]).toBeDefined();
    const ok = (path: string, method: string) =>
      doc.paths[path]![method]!.responses["200"]!.content!["application/json"]!.schema;
    expect(ok("/users/{user_uuid}", "get")).toEqual({ $ref: "#/components/schemas/User" });
    expect(ok("/users", "get")).toMatchObject({
      properties: { items: { type: "array", items: { $ref: "#/components/schemas/User" } } },
    });
    expect(ok("/users/{user_uuid}/groups", "get")).toMatchObject({
      properties: { items: { items: { $ref: "#/components/schemas/Group" } } },
    });
    expect(ok("/token", "post")).toMatchObject({ properties: { data: { $ref: "#/components/schemas/Token" } } });
    expect(doc.info.license).toEqual({ name: "Apache-2.0", identifier: "Apache-2.0" });
  });

  test("every tag says what its operations are for (src/http/openapi-tags.ts)", () => {
    const tags = (doc as unknown as { tags: Array<{ name: string; description: string }> }).tags;
    const used = new Set(operations().flatMap(({ op }) => (op as unknown as { tags: string[] }).tags));
    expect(tags.map((t) => t.name).sort()).toEqual([...used].sort());
    for (const t of tags) expect([t.name, t.description.length > 40]).toEqual([t.name, true]);
  });

  test("documents exactly the routes the app answers", () => {
    // Hono registers a declared HEAD route as a GET handler: compare as GET, duplicates included.
    const documented = operations()
      .map(
        ({ path, method }) =>
          `${method === "head" ? "GET" : method.toUpperCase()} /0.1${path.replace(/\{(\w+)\}/g, ":$1")}`,
      )
      .sort();
    const served = t.http.routes
      .filter((r) => r.method !== "ALL" && !r.path.endsWith("*"))
      .map((r) => `${r.method} ${r.path}`)
      .sort();
    expect(served).toEqual(documented);
  });
});
