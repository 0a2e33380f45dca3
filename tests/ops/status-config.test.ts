import { expect, test } from "bun:test";
import { parse as parseYaml } from "yaml";
import { routeGroups } from "../../src/app.ts";
import type { Env } from "../../src/http/route.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, tokenFor } from "../helpers/fixtures.ts";

describeEachDb("status, config, OpenAPI and the error model", (get) => {
  test("HEAD /0.1/status needs no token and has no body", async () => {
    const r = await get().request("HEAD", "/0.1/status");
    expect([r.status, r.text]).toEqual([200, ""]);
  });

  test("GET /0.1/status lists components for top-tenant admins only", async () => {
    const t = get();
    const { token } = await tokenFor(t.app, { acl: ["auth.status.read"] });
    const r = await t.request("GET", "/0.1/status", { token });
    expect(r.status).toBe(200);
    expect(r.json.rest_api).toEqual({ status: "ok" });
    expect(r.json.database).toEqual({ status: "ok", kind: t.kind, listening: true });
    expect(r.json.plugins.wazo_user.status).toBe("ok");
    const tenantAdmin = (await tokenFor(t.app, { acl: ["#"], tenantUuid: await createTenantRow(t.app) })).token;
    const refused = await t.request("GET", "/0.1/status", { token: tenantAdmin });
    expect(refused.status).toBe(401);
    expect(refused.json.error_id).toBe("unauthorized");
  });

  test("GET /0.1/config masks secrets; PATCH changes debug; bad patches are 400", async () => {
    const t = get();
    t.app.config.bootstrap_user_password = "very-secret";
    t.app.config.db_uri = "postgresql://asterisk:proformatique@localhost/asterisk";
    const { token } = await tokenFor(t.app, { acl: ["auth.config.#"] });
    const r = await t.request("GET", "/0.1/config", { token });
    expect(r.status).toBe(200);
    expect(r.json.bootstrap_user_password).toBe("********");
    expect(r.json.db_uri).toBe("postgresql://asterisk:********@localhost/asterisk");
    expect(r.text).not.toContain("very-secret");
    expect(r.text).not.toContain("proformatique");
    t.app.config.db_uri = null;
    let p = await t.request("PATCH", "/0.1/config", { token, body: [{ op: "replace", path: "/debug", value: true }] });
    expect([p.status, p.json.debug]).toEqual([200, true]);
    expect(t.app.log.level).toBe("debug");
    p = await t.request("PATCH", "/0.1/config", { token, body: [{ op: "replace", path: "/debug", value: false }] });
    expect(t.app.log.level).toBe("info");
    for (const bad of [
      [{ op: "add", path: "/debug", value: true }],
      [{ op: "replace", path: "/db_uri", value: "x" }],
      [{ op: "replace", path: "/debug", value: "yes" }],
      {},
      [],
    ]) {
      p = await t.request("PATCH", "/0.1/config", { token, body: bad });
      expect(p.status).toBe(400);
      expect(p.json.error_id).toBe("invalid-data");
    }
    const tenantAdmin = (await tokenFor(t.app, { acl: ["#"], tenantUuid: await createTenantRow(t.app) })).token;
    expect((await t.request("GET", "/0.1/config", { token: tenantAdmin })).status).toBe(401);
  });

  test("CORS: the request Origin is echoed, preflights answered, nothing added without Origin", async () => {
    const t = get();
    const pre = await t.request("OPTIONS", "/0.1/token", {
      headers: {
        Origin: "https://app.example.com",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "X-Auth-Token",
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("Access-Control-Allow-Origin")).toBe("https://app.example.com");
    expect(pre.headers.get("Access-Control-Allow-Headers")).toContain("Wazo-Tenant");
    const plain = await t.request("HEAD", "/0.1/status");
    expect(plain.headers.get("Access-Control-Allow-Origin")).toBeNull();
  });

  test("unknown route 404, wrong method 405, malformed JSON 400 — one body", async () => {
    const t = get();
    const r404 = await t.request("GET", "/0.1/nothing/here");
    expect(r404.status).toBe(404);
    expect(Object.keys(r404.json).sort()).toEqual(["details", "error_id", "message", "resource", "timestamp"]);
    expect(r404.json.error_id).toBe("not-found");
    const r405 = await t.request("PUT", "/0.1/status");
    expect([r405.status, r405.json.error_id]).toEqual([405, "method-not-allowed"]);
    const bad = await t.request("POST", `/0.1/token/${crypto.randomUUID()}/scopes/check`, { rawBody: "{oops" });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({
      error_id: "invalid-data",
      message: "Invalid request",
      details: { _schema: { constraint_id: "json" } },
    });
  });

  test("an unexpected exception is a 500 with the one body and no stack trace", async () => {
    const t = get();
    const { RouteGroup } = await import("../../src/http/route.ts");
    const { Hono } = await import("hono");
    const { errorResponse } = await import("../../src/http/error-response.ts");
    const group = new RouteGroup("boom").get("/boom", { summary: "throws", responses: {} }, () => {
      throw new Error("secret internals at /srv/x.ts:12");
    });
    const hono = new Hono<Env>();
    hono.use("*", async (c, next) => {
      c.set("app", t.app);
      await next();
    });
    hono.route("/", group.hono);
    hono.onError((err, c) => errorResponse(c, err, t.app.log));
    const res = await hono.request("/boom");
    const text = await res.text();
    expect(res.status).toBe(500);
    expect(JSON.parse(text)).toMatchObject({
      error_id: "internal-error",
      message: "Internal Server Error",
      details: {},
    });
    expect(text).not.toContain("secret internals");
  });

  test("GET /0.1/api/api.yml documents every route with its ACL, headers before path parameters", async () => {
    const t = get();
    const r = await t.request("GET", "/0.1/api/api.yml");
    expect(r.status).toBe(200);
    expect(r.headers.get("Content-Type")).toContain("yaml");
    const doc = parseYaml(r.text);
    const specs = routeGroups(t.app).flatMap((g) => g.specs);
    expect(specs.length).toBeGreaterThan(5);
    for (const s of specs) {
      const op = doc.paths[s.path]?.[s.method];
      expect(op).toBeDefined();
      if (s.acl) expect(op["x-required-acl"]).toBe(s.acl);
      const kinds = (op.parameters as Array<{ in: string }>).map((p) => p.in);
      const rank = { header: 0, path: 1, query: 2 } as Record<string, number>;
      expect([...kinds].sort((a, b) => rank[a]! - rank[b]!)).toEqual(kinds);
    }
    expect(doc.paths["/token"].post.requestBody).toBeDefined();
  });
});
